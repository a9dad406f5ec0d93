"""Run an experiment: config -> data -> federations -> results -> report."""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomli_w

from fedmosaic import __version__
from fedmosaic.atomic import atomic_write, write_json
from fedmosaic.data.arrays import ArrayDataset
from fedmosaic.data.catalog import load_dataset
from fedmosaic.data.partition import partition
from fedmosaic.errors import ConfigError
from fedmosaic.experiments.config import ExperimentConfig, fingerprint, method_params
from fedmosaic.experiments.jobs import combine, jobs_for
from fedmosaic.experiments.outputs import (
    CHECKPOINTS,
    RESULTS,
    SUMMARY,
    prepare_out_dir,
    summary_rows,
)
from fedmosaic.experiments.progress import ProgressSink, SilentProgress
from fedmosaic.federation import Federation, InProcessGrid, derive_rng
from fedmosaic.methods.registry import HorizontalTask, get_method
from fedmosaic.report import write_report


@dataclass(frozen=True)
class FederatedData:
    """The clients' training data and the global test set."""

    clients: list[ArrayDataset]
    test: ArrayDataset


def prepare_data(config: ExperimentConfig, *, data_dir: str | Path | None = None) -> FederatedData:
    """Load the dataset and partition its training split across clients.

    Parameters
    ----------
    config : ExperimentConfig
        The experiment.
    data_dir : str or Path or None
        Overrides ``data.data_dir`` (the ``--data-dir`` option).
    """
    splits = load_dataset(
        config.data.dataset,
        data_dir=data_dir if data_dir is not None else config.data.data_dir,
        seed=config.seed,
        test_fraction=config.data.test_fraction,
    )
    p = config.partition
    if p.num_clients > len(splits.train):
        raise ConfigError(
            "partition.num_clients",
            f"more clients ({p.num_clients}) than training samples ({len(splits.train)})",
        )
    parts = partition(
        splits.train.y,
        scheme=p.scheme,
        num_clients=p.num_clients,
        rng=derive_rng(config.seed, "partition"),
        alpha=p.alpha,
        classes_per_client=p.classes_per_client,
        min_size=p.min_size,
    )
    return FederatedData(clients=[splits.train.subset(part) for part in parts], test=splits.test)


def run_experiment(
    config: ExperimentConfig,
    out_dir: Path,
    *,
    data_dir: str | Path | None = None,
    resume: bool = False,
    overwrite: bool = False,
    progress: ProgressSink | None = None,
) -> dict[str, Any]:
    """Run every run of ``config`` on identical partitions and write the results.

    Writes ``config.toml`` at the start, a checkpoint after every round, and
    at the end ``results.json``, ``summary.json``, ``report.md`` and
    ``report.html``. Nothing is written before the configuration and the
    data have been checked.

    Parameters
    ----------
    config : ExperimentConfig
        The experiment.
    out_dir : Path
        Output folder.
    data_dir : str or Path or None
        Overrides ``data.data_dir``.
    resume : bool, default False
        Continue an interrupted run from its checkpoints.
    overwrite : bool, default False
        Replace a run already in ``out_dir``.
    progress : ProgressSink or None
        Receives round-by-round progress.

    Returns
    -------
    dict
        The content of ``results.json``.
    """
    progress = progress or SilentProgress()
    data = prepare_data(config, data_dir=data_dir)
    finished = prepare_out_dir(out_dir, resume=resume, overwrite=overwrite)
    if finished is not None:
        return finished
    document = config.model_dump(mode="json", exclude_none=True)
    atomic_write(out_dir / "config.toml", lambda f: f.write(tomli_w.dumps(document).encode()))
    runs = [
        _run(config, index, data, out_dir, document, resume=resume, progress=progress)
        for index in range(len(config.runs))
    ]
    results = {
        "fedmosaic_version": __version__,
        "experiment": config.name,
        "description": config.description,
        "seed": config.seed,
        "config": document,
        "runs": runs,
    }
    write_json(out_dir / RESULTS, results)
    write_json(out_dir / SUMMARY, summary_rows(results))
    write_report(results, out_dir)
    shutil.rmtree(out_dir / CHECKPOINTS, ignore_errors=True)
    return results


def _run(
    config: ExperimentConfig,
    index: int,
    data: FederatedData,
    out_dir: Path,
    document: dict[str, Any],
    *,
    resume: bool,
    progress: ProgressSink,
) -> dict[str, Any]:
    run = config.runs[index]
    method = get_method(run.method)
    params = method_params(config, index)
    jobs = jobs_for(run.setting, config, data.clients)
    rounds = config.federation.rounds
    progress.start_run(run.name, rounds * len(jobs))
    histories = []
    for job in jobs:
        task = HorizontalTask(job.clients, data.test, config.model, config.train)
        server, client_factory = method.build(task, params)
        federation = Federation(
            server,
            InProcessGrid(client_factory, config.seed),
            job.schedule,
            seed=config.seed,
            rounds=rounds,
            evaluate_every=config.federation.evaluate_every,
            checkpoint=out_dir / CHECKPOINTS / f"{index:02d}-{_slug(run.name)}" / f"{job.label}.npz",
            fingerprint=fingerprint([document, index, job.label]),
        )
        histories.append(
            federation.run(resume=resume, on_round=lambda record: progress.advance(run.name, record))
        )
    progress.finish_run(run.name)
    history = combine(run.setting, histories, data.clients)
    return {
        "name": run.name,
        "method": run.method,
        "setting": run.setting,
        "params": params.model_dump(mode="json"),
        "history": history,
        "final": _final_metrics(history),
        "bytes_up_total": sum(row["bytes_up"] for row in history),
        "bytes_down_total": sum(row["bytes_down"] for row in history),
        "wall_time_s": sum(row["wall_time_s"] for row in history),
    }


def _final_metrics(history: list[dict[str, Any]]) -> dict[str, float]:
    for row in reversed(history):
        if row["metrics"]:
            return dict(row["metrics"])
    return {}


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "run"
