"""Submit an experiment to a SuperLink with ``flwr run`` and stream its progress.

The Flower app is written on the spot: a ``pyproject.toml`` naming
fedmosaic's ``ServerApp`` and ``ClientApp`` (no dependencies: they are
already installed where the SuperLink and SuperNodes run) and declaring the
run-config keys the experiment travels in.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import tomli_w

from fedmosaic.deploy.processes import (
    Connection,
    check_reachable,
    flower_command,
    flower_environment,
    write_flwr_config,
)
from fedmosaic.errors import FedmosaicError
from fedmosaic.experiments.flower_server import RUN_CONFIG_DEFAULTS, encode_experiment

CONNECTION = "fedmosaic"
"""Name under which :func:`submit` configures the SuperLink for ``flwr``."""


def write_app(folder: Path) -> Path:
    """Write the Flower app (its ``pyproject.toml``) into ``folder`` and return the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    project = {
        "project": {
            "name": "fedmosaic-app",
            "version": "1.0.0",
            "description": "fedmosaic experiments on Flower",
            "license": "Apache-2.0",
            "dependencies": [],
        },
        "tool": {
            "flwr": {
                "app": {
                    "publisher": "fedmosaic",
                    "components": {
                        "serverapp": "fedmosaic.experiments.flower_server:server_app",
                        "clientapp": "fedmosaic.experiments.flower_client:client_app",
                    },
                    "config": RUN_CONFIG_DEFAULTS,
                }
            }
        },
    }
    (folder / "pyproject.toml").write_text(tomli_w.dumps(project))
    return folder


def submit(
    source: dict[str, Any],
    out_dir: Path,
    connection: Connection,
    workdir: Path,
    *,
    data_dir: Path | None = None,
    resume: bool = False,
    overwrite: bool = False,
    hold_after: int = 0,
    hold_dir: Path | None = None,
    write: Callable[[str], None] = lambda line: print(line, end="", flush=True),
) -> dict[str, Any]:
    """Run the experiment ``source`` on the SuperLink at ``connection``; return its results.

    Parameters
    ----------
    source : dict
        The raw experiment configuration (already validated by the caller).
    out_dir : Path
        Output folder, written by the ``ServerApp`` on the SuperLink's machine.
    connection : Connection
        The SuperLink.
    workdir : Path
        Folder for the app and the ``flwr`` configuration.
    data_dir : Path or None
        Data folder of the ``ServerApp`` (test data for evaluation).
    resume, overwrite : bool
        As for ``fedmosaic run``.
    hold_after : int, default 0
        Hold the run after this round (0: never) until ``hold_dir`` holds its release file
        (:mod:`fedmosaic.experiments.hold`), to act on the deployment at a known point of the run.
    hold_dir : Path or None
        Where the held and release markers are; required with ``hold_after``.
    write : callable str -> None
        Receives the streamed output line by line.

    Raises
    ------
    ConfigError
        If nothing answers at ``connection.address`` (before anything is written).
    FedmosaicError
        If ``flwr run`` fails or the run ends without ``results.json``.
    """
    if hold_after > 0 and hold_dir is None:
        raise ValueError("hold_after needs a hold_dir")
    check_reachable(connection)
    workdir = workdir.resolve()
    flwr_home = workdir / "flwr-home"
    write_flwr_config(flwr_home, CONNECTION, connection)
    app = write_app(workdir / "app")
    out_dir = out_dir.resolve()
    settings = {
        "experiment": encode_experiment(source),
        "out": str(out_dir),
        "data-dir": "" if data_dir is None else str(data_dir.resolve()),
        "resume": resume,
        "overwrite": overwrite,
        "hold-after": hold_after,
        "hold-dir": "" if hold_dir is None else str(hold_dir.resolve()),
    }
    run_config = workdir / "run-config.toml"
    run_config.write_text(tomli_w.dumps(settings))
    command = [flower_command("flwr"), "run", str(app), CONNECTION, "--stream", "--run-config", str(run_config)]
    process = subprocess.Popen(
        command,
        env=flower_environment(flwr_home),
        cwd=workdir,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    assert process.stdout is not None
    for line in process.stdout:
        write(line)
    code = process.wait()
    results = out_dir / "results.json"
    if code != 0 or not results.exists():
        raise FedmosaicError(
            f"the run on {connection.address} ended without results (flwr run exit code {code}); its output above says why"
        )
    document: dict[str, Any] = json.loads(results.read_text())
    return document
