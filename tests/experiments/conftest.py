"""A Ray cluster shared by the Flower simulation tests of a module.

Flower's simulation starts Ray for every job and stops it afterwards (its
head processes, several seconds of CPU each time). The simulation tests of
:mod:`tests.experiments.test_engines` run their jobs on one cluster instead,
given by ``federation.ray_address`` (the path a site with its own Ray
cluster takes); they run in two xdist groups (``ray-digits`` and
``ray-asia-vertical``), hence in two workers, one cluster each, stopped when
the worker's tests of the module are done. The cluster is started by ``ray.init`` in a helper
process, not by ``ray start``, so it is not recorded as this machine's
current cluster: a simulation given no address still starts its own Ray.
"""

import subprocess
import sys
from collections.abc import Callable, Iterator

import pytest

RAY_CPUS = 1
"""CPUs the shared cluster offers: one actor per job, which runs the job's clients in turn.

Each actor is a process that imports PyTorch and fedmosaic (about 10 s of CPU
with its share of the job), so one per job halves the cost. A client's state
still travels in ``context.state`` between messages (the actor rebuilds the
client from the job header); that the state survives a process it did not
live in is tested on a deployment, a SuperNode restarted mid-run
(``tests/deploy/test_local.py``).
"""

ADDRESS = "ray-address"
"""What precedes the cluster's address in the helper's output (Ray may print lines of its own)."""

RAY_HEAD = f"""
import sys
import ray

context = ray.init(num_cpus={RAY_CPUS}, include_dashboard=False, log_to_driver=False)
print("{ADDRESS}", context.address_info["gcs_address"], flush=True)
sys.stdin.read()
ray.shutdown()
"""
"""Starts a Ray cluster, prints its address, and stops it when its standard input closes."""


@pytest.fixture(scope="module")
def ray_address() -> Iterator[str]:
    """The address of the module's Ray cluster, stopped (every process it started) after the module's tests."""
    head = subprocess.Popen([sys.executable, "-c", RAY_HEAD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        lines = iter(head.stdout.readline, "") if head.stdout else iter(())
        address = next((line.split()[1] for line in lines if line.startswith(f"{ADDRESS} ")), None)
        if address is None:
            pytest.fail(f"Ray did not start (exit status {head.wait()})")
        yield address
    finally:
        head.communicate(timeout=120)  # closes its standard input: Ray stops


Command = Callable[..., tuple[object, str, str]]
"""``fedmosaic`` with these arguments, run in the test's process: its exit code, standard output and standard error."""


@pytest.fixture
def command(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Command:
    """The command's entry point called in this process (see :data:`Command`)."""
    from fedmosaic.cli import main

    def run(*args: str) -> tuple[object, str, str]:
        monkeypatch.setattr(sys, "argv", ["fedmosaic", *args])
        with pytest.raises(SystemExit) as exited:
            main()
        captured = capsys.readouterr()
        return exited.value.code, captured.out, captured.err

    return run
