"""A local Flower deployment: one SuperLink and N SuperNodes on 127.0.0.1, stopped cleanly.

Flower's processes start others in sessions of their own (SuperExec, the
``ServerApp`` and ``ClientApp`` processes), so a process group does not hold
them all. Every process the deployment starts carries a marker in its
environment, which its children inherit; stopping the deployment signals
every process that carries it (found through ``/proc``, so Linux only), and
no process outlives the deployment. Logs go to ``<folder>/logs/<name>.log``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import fedmosaic
from fedmosaic.deploy.security import NodeKey, TlsFiles, make_node_key, make_secret, make_tls
from fedmosaic.deploy.supernode import POLL_INTERVAL_S, WAKE_OPTION, poll_interval
from fedmosaic.deploy.wake import new_wake_name
from fedmosaic.errors import ConfigError, FedmosaicError
from fedmosaic.federation.flower.site_state import STATE_DIR

HOST = "127.0.0.1"
FEDERATION = "fedmosaic-local"
"""Name of the local deployment's connection in the ``flwr`` configuration."""
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 10.0
MARKER = "FEDMOSAIC_DEPLOYMENT_PROCESS"
"""Environment variable marking the processes of a deployment: ``<deployment id>/<process name>``."""
WORKER = "-worker"
"""Suffix of the name of a SuperNode's warm worker (:mod:`fedmosaic.deploy.worker`); it carries its node's marker."""


@dataclass(frozen=True)
class Connection:
    """How the ``flwr`` command reaches a SuperLink.

    Parameters
    ----------
    address : str
        ``host:port`` of the SuperLink.
    root_certificates : Path or None
        The certificate authority to trust; ``None`` means an insecure
        (plain-text) connection.
    """

    address: str
    root_certificates: Path | None = None


SUPERLINK_PROBE_TIMEOUT_S = 5.0
"""How long :func:`check_reachable` waits for a SuperLink to accept a connection."""


def check_reachable(connection: Connection, *, field: str = "--superlink") -> None:
    """Refuse, on one line, a SuperLink address that is malformed or where nothing listens.

    ``flwr run`` reports an unreachable SuperLink in a boxed message of
    several lines and leaves the caller to guess which setting was wrong;
    this check names the setting first.

    Parameters
    ----------
    connection : Connection
        The SuperLink to reach.
    field : str, default "--superlink"
        The setting named in the error.

    Raises
    ------
    ConfigError
        If ``connection.address`` is not ``HOST:PORT`` or refuses a TCP connection.

    Examples
    --------
    >>> check_reachable(Connection("localhost"))
    Traceback (most recent call last):
    ...
    fedmosaic.errors.ConfigError: --superlink: expected HOST:PORT with a port from 1 to 65535, got 'localhost'
    """
    host, _, port = connection.address.rpartition(":")
    if not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise ConfigError(field, f"expected HOST:PORT with a port from 1 to 65535, got {connection.address!r}")
    if connection.root_certificates is not None:
        check_certificate(connection.root_certificates)
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=SUPERLINK_PROBE_TIMEOUT_S):
            pass
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise ConfigError(field, f"no SuperLink answers at {connection.address} ({reason.lower()})") from None


def check_certificate(path: Path, field: str = "--root-certificates") -> None:
    """Refuse, on one line, a root certificate that is missing, unreadable or not PEM.

    Without this check ``flwr`` reports such a file as a connection that failed.

    Raises
    ------
    ConfigError
        Naming ``field`` and the file.

    Examples
    --------
    >>> check_certificate(Path("/no/such/ca.pem"))
    Traceback (most recent call last):
    ...
    fedmosaic.errors.ConfigError: --root-certificates: /no/such/ca.pem: no such file (the certificate of the authority that signed the SuperLink's)
    """
    try:
        text = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(
            field, f"{path}: no such file (the certificate of the authority that signed the SuperLink's)"
        ) from None
    except OSError as error:
        raise ConfigError(field, f"{path}: cannot be read ({error.strerror or error})") from None
    if b"-----BEGIN CERTIFICATE-----" not in text:
        raise ConfigError(field, f"{path}: not a PEM certificate (no -----BEGIN CERTIFICATE----- block)")


def flower_command(name: str) -> str:
    """Path of a Flower command installed beside this Python (``flwr``, ``flower-superlink``...)."""
    beside = Path(sys.executable).parent / name
    if not beside.exists():
        raise FedmosaicError(f"Flower command {name!r} not found beside {sys.executable}; install flwr")
    return str(beside)


def flower_environment(flwr_home: Path) -> dict[str, str]:
    """Environment of every Flower process: telemetry off, a private ``FLWR_HOME``, fedmosaic importable."""
    env = dict(os.environ)
    source = str(Path(fedmosaic.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (source, env.get("PYTHONPATH", "")) if p)
    env["PATH"] = os.pathsep.join((str(Path(sys.executable).parent), env.get("PATH", "")))
    env["FLWR_TELEMETRY_ENABLED"] = "0"
    env["FLWR_HOME"] = str(flwr_home)
    return env


def free_port() -> int:
    """A TCP port free on 127.0.0.1 at the time of asking."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


def write_flwr_config(flwr_home: Path, name: str, connection: Connection) -> Path:
    """Write the ``flwr`` configuration naming ``connection`` as ``name`` (and the default)."""
    flwr_home.mkdir(parents=True, exist_ok=True)
    lines = ["[superlink]", f'default = "{name}"', "", f"[superlink.{name}]", f'address = "{connection.address}"']
    if connection.root_certificates is None:
        lines.append("insecure = true")
    else:
        lines.append(f'root-certificates = "{connection.root_certificates}"')
    path = flwr_home / "config.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


class LocalDeployment:
    """Starts a SuperLink and ``nodes`` SuperNodes (partition ``i`` on node ``i``) on 127.0.0.1.

    Parameters
    ----------
    folder : Path
        Working folder: logs, certificates, keys, the ``flwr`` configuration.
    nodes : int
        Number of SuperNodes.
    tls : bool, default False
        Generate a certificate authority and a SuperLink certificate and
        connect over TLS; otherwise connections are plain text.
    auth : bool, default False
        Generate a key pair per SuperNode, register the public keys with the
        SuperLink and make it refuse unknown nodes.
    node_config : callable int -> dict, optional
        Extra node config of node ``i`` (e.g. its ``data-dir``). Each node
        keeps its client states in ``<folder>/state/node-<i>`` (its
        ``state-dir``) unless this names another folder.
    log : callable str -> None, default print to stderr
        Receives progress lines of the deployment itself.
    poll_interval_s : float, default POLL_INTERVAL_S
        Longest fixed wait of a SuperNode, in seconds (0.05 to 3): each
        runs with :mod:`fedmosaic.deploy.supernode`, which caps Flower's 3 s
        wait after an empty poll and its 0.5 s reply checks; 3 keeps
        Flower's own waits.

    Examples
    --------
    ``with LocalDeployment(folder, 3, tls=True, auth=True) as deployment: ...``
    then submit experiments to ``deployment.connection``.
    """

    def __init__(
        self,
        folder: Path,
        nodes: int,
        *,
        tls: bool = False,
        auth: bool = False,
        node_config: Callable[[int], dict[str, str]] | None = None,
        log: Callable[[str], None] | None = None,
        poll_interval_s: float = POLL_INTERVAL_S,
    ) -> None:
        if nodes < 1:
            raise FedmosaicError(f"--nodes must be >= 1, got {nodes}")
        self.poll_interval_s = poll_interval(poll_interval_s)
        self.folder = folder.resolve()
        self.nodes = nodes
        self.tls = tls
        self.auth = auth
        self._node_config = node_config or (lambda index: {})
        self._log = log or (lambda line: print(line, file=sys.stderr, flush=True))
        self.flwr_home = self.folder / "flwr-home"
        self.env = flower_environment(self.flwr_home)
        self.tls_files: TlsFiles | None = None
        self.keys: dict[int, NodeKey] = {}
        self.connection = Connection(address="")
        self._processes: dict[str, subprocess.Popen[bytes]] = {}
        self._id = uuid.uuid4().hex

    def __enter__(self) -> LocalDeployment:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self, error_type: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.stop()

    def start(self) -> None:
        """Start the SuperLink, register node keys (``auth``), then start the SuperNodes."""
        (self.folder / "logs").mkdir(parents=True, exist_ok=True)
        port = free_port()
        command = [
            flower_command("flower-superlink"),
            "--host",
            HOST,
            "--port",
            str(port),
            "--disable-runtime-dependency-installation",
        ]
        if self.tls:
            self.tls_files = make_tls(self.folder / "certificates")
            command += [
                "--ssl-ca-certfile",
                str(self.tls_files.ca_certificate),
                "--ssl-certfile",
                str(self.tls_files.certificate),
                "--ssl-keyfile",
                str(self.tls_files.private_key),
            ]
        else:
            command.append("--insecure")
        if self.auth:
            command.append("--enable-supernode-auth")
        self.connection = Connection(f"{HOST}:{port}", self.tls_files.ca_certificate if self.tls_files else None)
        write_flwr_config(self.flwr_home, FEDERATION, self.connection)
        self._spawn("superlink", command)
        _wait_for_port(port, self._processes["superlink"])
        self._log(
            f"SuperLink on {self.connection.address} ({'TLS' if self.tls else 'insecure'}{', node auth' if self.auth else ''})"
        )
        for index in range(self.nodes):
            if self.auth:
                self.keys[index] = make_node_key(self.folder / "keys", f"node-{index}")
                self.register(self.keys[index])
            self.start_node(index, self.keys.get(index))

    def register(self, key: NodeKey) -> None:
        """Register a SuperNode's public key with the SuperLink (``flwr supernode register``)."""
        result = subprocess.run(
            [flower_command("flwr"), "supernode", "register", str(key.public_key), FEDERATION],
            env=self.env,
            cwd=self.folder,
            capture_output=True,
            text=True,
            timeout=START_TIMEOUT_S,
        )
        if result.returncode != 0:
            raise FedmosaicError(
                f"registering {key.public_key.name} failed: {(result.stdout + result.stderr).strip()[-500:]}"
            )

    def start_node(self, index: int, key: NodeKey | None = None, *, name: str | None = None) -> subprocess.Popen[bytes]:
        """Start a SuperNode serving partition ``index`` (authenticating with ``key`` if given) and its warm worker.

        The SuperNode runs with ``--isolation process``: it starts no process
        per message; its worker (:mod:`fedmosaic.deploy.worker`), authenticated
        with a secret generated for the node, runs its messages, is signalled
        when one waits (:mod:`fedmosaic.deploy.wake`) and exits with the node.
        Flower's ``flower-supernode`` runs in fedmosaic's launcher
        (:mod:`fedmosaic.deploy.supernode`), its waits capped at ``poll_interval_s``.
        """
        config = {
            "partition-id": str(index),
            "num-partitions": str(self.nodes),
            STATE_DIR: str(self.folder / "state" / f"node-{index}"),
            **self._node_config(index),
        }
        runtime_port = free_port()
        wake_name = new_wake_name()
        command = [
            sys.executable,
            "-m",
            "fedmosaic.deploy.supernode",
            "--poll-interval",
            str(self.poll_interval_s),
            WAKE_OPTION,
            wake_name,
            "--superlink",
            self.connection.address,
            "--host",
            HOST,
            "--port",
            str(runtime_port),
            "--node-config",
            " ".join(f'{k}="{v}"' if not v.isdigit() else f"{k}={v}" for k, v in config.items()),
        ]
        if self.connection.root_certificates is None:
            command.append("--insecure")
        else:
            command += ["--root-certificates", str(self.connection.root_certificates)]
        if key is not None:
            command += ["--auth-supernode-private-key", str(key.private_key)]
        name = name or f"node-{index}"
        secret = make_secret(self.folder / "secrets" / name)
        command += ["--isolation", "process", "--superexec-auth-secret-file", str(secret)]
        node = self._spawn(name, command)
        worker = [
            sys.executable,
            "-m",
            "fedmosaic.deploy.worker",
            "--runtime-api-address",
            f"{HOST}:{runtime_port}",
            "--superexec-auth-secret-file",
            str(secret),
            "--parent-pid",
            str(node.pid),
            "--wake-name",
            wake_name,
        ]
        self._spawn(f"{name}{WORKER}", worker, marker=name)
        return node

    def stop_run(self, run_id: int) -> None:
        """Stop a Flower run (``flwr stop``), as an operator interrupting it would."""
        result = subprocess.run(
            [flower_command("flwr"), "stop", str(run_id), FEDERATION],
            env=self.env,
            cwd=self.folder,
            capture_output=True,
            text=True,
            timeout=START_TIMEOUT_S,
            check=False,
        )
        if result.returncode != 0:
            raise FedmosaicError(f"stopping run {run_id} failed: {(result.stdout + result.stderr).strip()[-500:]}")

    def kill_node(self, index: int) -> None:
        """Kill SuperNode ``index`` and every process it started at once (SIGKILL), as a crash would."""
        processes = [self._processes.pop(f"node-{index}"), self._processes.pop(f"node-{index}{WORKER}")]
        for pid in marked_processes(f"{self._id}/node-{index}"):
            _signal(pid, signal.SIGKILL)
        for process in processes:
            process.wait()

    def revive(self) -> list[int]:
        """Start again every SuperNode that is not running (killed, or exited); return their indices."""
        dead = [
            index
            for index in range(self.nodes)
            if (process := self._processes.get(f"node-{index}")) is None or process.poll() is not None
        ]
        for index in dead:
            for name in (f"node-{index}", f"node-{index}{WORKER}"):
                if (process := self._processes.pop(name, None)) is not None:
                    process.kill()
                    process.wait()
            self.start_node(index, self.keys.get(index))
        return dead

    def remaining(self, name: str = "") -> list[int]:
        """Processes of this deployment still alive (none once it has stopped); only those of ``name`` if given.

        ``name`` is a process name (``node-2``): the SuperNode, its worker
        and every process either started.
        """
        return marked_processes(f"{self._id}/{name}")

    def process(self, name: str) -> subprocess.Popen[bytes]:
        """A running process of the deployment (``superlink``, ``node-<i>``...)."""
        return self._processes[name]

    def stop(self) -> None:
        """Stop every process: SIGTERM to the nodes, then the SuperLink, then SIGKILL to any left."""
        for name in sorted(self._processes, key=lambda n: n == "superlink"):
            process = self._processes.pop(name)
            process.terminate()
            try:
                process.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while (left := self.remaining()) and time.monotonic() < deadline:
            for pid in left:
                _signal(pid, signal.SIGTERM)
            time.sleep(0.2)
        for pid in self.remaining():
            _signal(pid, signal.SIGKILL)

    def _spawn(self, name: str, command: list[str], *, marker: str | None = None) -> subprocess.Popen[bytes]:
        env = {**self.env, MARKER: f"{self._id}/{marker or name}"}
        with open(self.folder / "logs" / f"{name}.log", "ab") as log:
            process = subprocess.Popen(
                command,
                env=env,
                cwd=self.folder,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        self._processes[name] = process
        return process


def marked_processes(prefix: str) -> list[int]:
    """Ids of the live processes whose deployment marker starts with ``prefix`` (zombies excluded)."""
    wanted = f"{MARKER}={prefix}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and any(item.startswith(wanted) for item in environ.split(b"\0")):
            found.append(int(entry.name))
    return sorted(found)


def _signal(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # already gone: nothing to stop
        os.kill(pid, signum)


def _wait_for_port(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise FedmosaicError(f"the SuperLink exited at start (code {process.returncode}); see its log")
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            if probe.connect_ex((HOST, port)) == 0:
                return
        time.sleep(0.2)
    raise FedmosaicError(f"the SuperLink did not open {HOST}:{port} within {START_TIMEOUT_S:g} s")
