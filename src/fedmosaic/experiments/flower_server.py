"""Flower's ``ServerApp`` that runs a whole fedmosaic experiment on a deployment.

``flwr run`` starts it on the SuperLink's machine with the run config written
by :mod:`fedmosaic.deploy.submit`: the experiment (its validated
configuration as base64 JSON), the output folder, and whether to resume or
overwrite. The federated jobs use the deployment's SuperNodes as clients
(:class:`~fedmosaic.experiments.engines.DeploymentEngine`); progress is
printed one line per round, which ``flwr run --stream`` shows.

Deployment reference: ``fedmosaic.experiments.flower_server:server_app``.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from flwr.app import Context
from flwr.serverapp import Grid as FlowerGridApi
from flwr.serverapp import ServerApp

from fedmosaic.experiments.config import load_config
from fedmosaic.experiments.engines import DeploymentEngine
from fedmosaic.experiments.hold import HeldProgress
from fedmosaic.experiments.progress import LineProgress, ProgressSink
from fedmosaic.experiments.runner import run_experiment

RUN_CONFIG_DEFAULTS: dict[str, Any] = {
    "experiment": "",
    "out": "",
    "data-dir": "",
    "resume": False,
    "overwrite": False,
    "hold-after": 0,
    "hold-dir": "",
}
"""The app's run config keys (``flwr run`` accepts overrides of declared keys only).

``hold-after`` (a round, 0 for none) and ``hold-dir`` hold the run after that round until released
(:mod:`fedmosaic.experiments.hold`)."""

server_app = ServerApp()


@server_app.main()
def main(grid: FlowerGridApi, context: Context) -> None:
    """Run the experiment of the run config, writing results to its output folder."""
    settings = {**RUN_CONFIG_DEFAULTS, **context.run_config}
    config = load_config(decode_experiment(str(settings["experiment"])))
    progress: ProgressSink = LineProgress()
    if int(settings["hold-after"]) > 0:
        progress = HeldProgress(progress, int(settings["hold-after"]), Path(str(settings["hold-dir"])))
    run_experiment(
        config,
        Path(str(settings["out"])),
        data_dir=str(settings["data-dir"]) or None,
        resume=bool(settings["resume"]),
        overwrite=bool(settings["overwrite"]),
        progress=progress,
        engine=DeploymentEngine(grid),
    )
    print(f"results: {Path(str(settings['out'])) / 'results.json'}", flush=True)


def encode_experiment(source: dict[str, Any]) -> str:
    """An experiment's raw configuration as one run-config string (base64 of its JSON).

    Examples
    --------
    >>> decode_experiment(encode_experiment({"name": "x"}))
    {'name': 'x'}
    """
    return base64.b64encode(json.dumps(source, sort_keys=True).encode()).decode()


def decode_experiment(text: str) -> dict[str, Any]:
    """The raw configuration :func:`encode_experiment` wrote."""
    source: dict[str, Any] = json.loads(base64.b64decode(text.encode()).decode())
    return source
