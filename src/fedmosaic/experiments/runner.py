"""Run an experiment: config -> data -> federations -> results -> report."""

from __future__ import annotations

import base64
import shutil
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from fedmosaic.devices import computing_on, resolve_device
from fedmosaic.errors import ConfigError, UntrainedRunError
from fedmosaic.experiments.aggregation import build_aggregation, build_secure
from fedmosaic.experiments.classification import ClassificationWorkload
from fedmosaic.experiments.config import ExperimentConfig, fingerprint, method_params, result_fingerprint
from fedmosaic.experiments.engines import Engine, InProcessEngine, JobSpec, SimulationEngine, gpus_per_client
from fedmosaic.experiments.grid import run_grid
from fedmosaic.experiments.job import Job
from fedmosaic.experiments.jobs import combine
from fedmosaic.experiments.model_cards import model_path, slug, write_job_model
from fedmosaic.experiments.model_parts import export_parts, party_details, run_client
from fedmosaic.experiments.outputs import CHECKPOINTS, claim_out_dir, finish_run, summary_rows
from fedmosaic.experiments.processes import job_cores, run_in_processes
from fedmosaic.experiments.progress import ProgressSink, SilentProgress
from fedmosaic.experiments.table_vertical import Scale
from fedmosaic.experiments.table_workload import job_header, prepare_tables_run
from fedmosaic.experiments.vertical_workload import VerticalWorkload
from fedmosaic.experiments.workloads import ConceptWorkload, prepare_workload
from fedmosaic.federation import Federation, Grid, HostileGrid, ReplyLimits, RoundRecord, hostile_clients
from fedmosaic.federation.audit import MessageLog
from fedmosaic.federation.logic import ClientLogic, ServerLogic
from fedmosaic.federation.privacy import PrivacyBudget
from fedmosaic.federation.robust import Aggregator
from fedmosaic.methods.registry import get_method
from fedmosaic.models.export import ModelExport
from fedmosaic.threads import torch_threads
from fedmosaic.version import __version__

MESSAGES = "messages"
"""Folder of the message audit in a run's output folder."""


def run_experiment(
    config: ExperimentConfig,
    out_dir: Path,
    *,
    data_dir: str | Path | None = None,
    resume: bool = False,
    overwrite: bool = False,
    progress: ProgressSink | None = None,
    cores: int | None = None,
    jobs: int = 1,
    engine: Engine | None = None,
) -> dict[str, Any]:
    """Run every run of ``config`` on identical partitions and write the results.

    Writes ``config.toml`` at the start, a checkpoint after every round, the
    tested model of each run in ``model/`` (:mod:`fedmosaic.experiments.model_cards`),
    and at the end ``results.json``, ``summary.json``, ``report.md`` and
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
    cores : int or None, default None
        CPU cores the run may use, which bounds the default number of
        worker processes (default: all this process may run on).
    jobs : int, default 1
        Run the experiment's runs (a grid's points) in this many parallel
        processes, sharing the cores; the results are those of ``jobs=1``.
    engine : Engine or None
        Runs the federated jobs; by default the one ``federation.engine``
        names (the in-process engine with ``federation.workers`` for
        ``inprocess``; ``flower`` needs the deployment's engine, given by the
        ``ServerApp`` the experiment runs in).

    Returns
    -------
    dict
        The content of ``results.json``.
    """
    if config.grid is not None:
        return run_grid(
            run_experiment,
            config,
            out_dir,
            data_dir=data_dir,
            resume=resume,
            overwrite=overwrite,
            progress=progress,
            cores=cores,
            jobs=jobs,
        )
    progress = progress or SilentProgress()
    resolve_device(config.train.device)  # a device this machine lacks is refused before anything is written
    engine = engine or configured_engine(config)
    workload = prepare_workload(config, data_dir=data_dir)
    document = config.document()
    workload = prepare_tables_run(workload, config, engine, document)
    with claim_out_dir(out_dir, document, resume=resume, overwrite=overwrite) as folder:
        if folder.finished is not None:
            return folder.finished
        return _run_all(config, workload, folder.path, document, engine, data_dir, resume, progress, cores, jobs)


def _run_all(
    config: ExperimentConfig,
    workload: ClassificationWorkload | ConceptWorkload,
    out_dir: Path,
    document: dict[str, Any],
    engine: Engine | None,
    data_dir: str | Path | None,
    resume: bool,
    progress: ProgressSink,
    cores: int | None,
    jobs: int,
) -> dict[str, Any]:
    """Run every run of ``config`` into the claimed folder ``out_dir`` and write the results there."""
    preparation = getattr(workload, "audit", None)  # own tables: the scaling or alignment exchange
    if preparation is not None:
        preparation.write(out_dir / MESSAGES)
    share = job_cores(cores, jobs, len(config.runs))
    tasks = [
        partial(_run, config, index, workload, out_dir, document, engine, data_dir, resume=resume, cores=share)
        for index in range(len(config.runs))
    ]
    if jobs > 1 and len(tasks) > 1:
        runs = run_in_processes(tasks, jobs, progress)
    else:
        runs = [task(progress) for task in tasks]
    check_trained(runs)
    results = {
        "fedmosaic_version": __version__,
        "experiment": config.name,
        "description": config.description,
        "seed": config.seed,
        "config": document,
        "runs": runs,
        "figures": [
            {"name": name, "caption": caption, "png_base64": base64.b64encode(png).decode()}
            for name, caption, png in workload.figures
        ],
    }
    finish_run(out_dir, results, summary_rows(results))
    shutil.rmtree(out_dir / CHECKPOINTS, ignore_errors=True)
    return results


def _run(
    config: ExperimentConfig,
    index: int,
    workload: ClassificationWorkload | ConceptWorkload,
    out_dir: Path,
    document: dict[str, Any],
    engine: Engine | None,
    data_dir: str | Path | None,
    progress: ProgressSink,
    *,
    resume: bool,
    cores: int | None,
) -> dict[str, Any]:
    with torch_threads(config.federation.threads), computing_on(config.train.device):
        run = config.runs[index]
        method = get_method(run.method)
        params = method_params(config, index)
        jobs = workload.jobs(run.setting, config)
        rounds = config.federation.rounds
        progress.start_run(run.name, rounds * len(jobs))
        histories, artifacts = [], []
        run_info = {
            "name": run.name,
            "method": run.method,
            "setting": run.setting,
            "params": params.model_dump(mode="json"),
        }
        for job in jobs:
            server, built_clients = method.build(job.task, params)
            federated = run.setting == "federated"
            aggregator, privacy = build_aggregation(config, job.schedule.num_clients) if federated else (None, None)
            client_factory = partial(_client, config, built_clients, out_dir, _party_scales(workload), secure=federated)
            model = model_path(Path(), index, slug(run.name), job.label if len(jobs) > 1 else None)
            exported: list[tuple[ModelExport, dict[str, str]]] = []
            federate = partial(
                _federate,
                config=config,
                index=index,
                job=job,
                server=server,
                aggregator=aggregator,
                privacy=privacy,
                out_dir=out_dir,
                document=document,
                resume=resume,
                progress=progress,
                model=model,
                exported=exported,
            )

            spec = JobSpec(
                document=document,
                run=index,
                label=job.label,
                schedule=job.schedule,
                seed=config.seed,
                client_factory=client_factory,
                data_dir=None if data_dir is None else str(data_dir),
                reply_timeout_s=config.federation.reply_timeout_s,
                extra=job_header(workload),
                sequential=method.kind == "vertical",
            )
            federated_engine = engine if engine is not None and run.setting == "federated" else None
            histories.append((federated_engine or InProcessEngine(config.federation, cores)).run_job(spec, federate))
            artifacts.append(server.artifacts())
            for export, written in exported:
                metrics = _final_metrics([record.to_dict() for record in histories[-1]])
                write_job_model(
                    out_dir / model, export, written, config=config, workload=workload, run=run_info, metrics=metrics
                )
        progress.finish_run(run.name)
        history = combine(run.setting, histories, jobs[0].pooled_bytes)
        return {
            **run_info,
            "history": history,
            "rounds_trained": sum(row["status"] == "ok" for row in history),
            "final": _final_metrics(history),
            "bytes_up_total": sum(row["bytes_up"] for row in history),
            "bytes_down_total": sum(row["bytes_down"] for row in history),
            "wall_time_s": sum(row["wall_time_s"] for row in history),
            "rounds_to_target": rounds_to_target(history, config.federation.target_accuracy),
            "artifacts": artifacts[0] if len(artifacts) == 1 else {"clients": artifacts},
        }


def _federate(
    grid: Grid,
    *,
    config: ExperimentConfig,
    index: int,
    job: Job,
    server: ServerLogic,
    aggregator: Aggregator | None,
    privacy: PrivacyBudget | None,
    out_dir: Path,
    document: dict[str, Any],
    resume: bool,
    progress: ProgressSink,
    model: Path,
    exported: list[tuple[ModelExport, dict[str, str]]],
) -> list[RoundRecord]:
    """Run ``job`` of run ``index`` on an engine's ``grid``; the model it exports is appended to ``exported``.

    The clients that keep parts of it write them into their ``model``
    folder (:func:`~fedmosaic.experiments.model_parts.export_parts`); with
    the model goes the SHA-256 of each part written.
    """
    run = config.runs[index]
    federation = Federation(
        server,
        _grid(config, run.setting, job.schedule.num_clients, grid),
        job.schedule,
        seed=config.seed,
        rounds=config.federation.rounds,
        evaluate_every=config.federation.evaluate_every,
        checkpoint=out_dir / CHECKPOINTS / f"{index:02d}-{slug(run.name)}" / f"{job.label}.npz",
        fingerprint=fingerprint([result_fingerprint(document), index, job.label]),
        limits=ReplyLimits(config.federation.max_reply_bytes, config.federation.max_examples),
        retries=config.federation.retries,
        aggregator=aggregator,
        privacy=privacy,
        secure=build_secure(config) if run.setting == "federated" else None,
        observer=(
            MessageLog(out_dir / MESSAGES / f"{index:02d}-{slug(run.name)}-{job.label}.jsonl")
            if config.federation.audit
            else None
        ),
    )
    history = federation.run(resume=resume, on_round=partial(progress.advance, run.name))
    export = server.exported_model()
    if export is not None:
        written = export_parts(grid, export, model.as_posix(), config.federation.rounds + 1)
        exported.append((export, written))
    return history


def _client(
    config: ExperimentConfig,
    factory: Callable[[int], ClientLogic],
    out_dir: Path,
    scales: Sequence[Scale | None],
    client: int,
    *,
    secure: bool,
) -> ClientLogic:
    """Client ``client`` of a run in process (:func:`~fedmosaic.experiments.model_parts.run_client`): its part goes to ``out_dir``."""
    return run_client(config, factory(client), out_dir, party_details(scales, client), secure=secure)


def _party_scales(workload: ClassificationWorkload | ConceptWorkload) -> Sequence[Scale | None]:
    """Each party's standardisation on parties' own vertical tables (in process, all at hand); else none."""
    return workload.scales if isinstance(workload, VerticalWorkload) else ()


def _grid(config: ExperimentConfig, setting: str, num_clients: int, grid: Grid) -> Grid:
    """The engine's grid, with the ``[attack]`` section's hostile clients in federated runs."""
    attack = config.attack
    if setting != "federated" or attack.fraction == 0:
        return grid
    hostile = hostile_clients(num_clients, attack.fraction, config.seed)
    return HostileGrid(grid, hostile, attack.kind, config.seed, config.federation.max_reply_bytes)


def configured_engine(config: ExperimentConfig) -> Engine | None:
    """The engine ``federation.engine`` names; None for ``inprocess``.

    The in-process engine is built per run (:class:`InProcessEngine`), with
    the cores the run may use.

    Raises
    ------
    ConfigError
        For ``flower``, which runs inside a deployment's ``ServerApp``
        (``fedmosaic run --superlink ADDRESS`` or ``fedmosaic deploy`` start it).
    """
    name = config.federation.engine
    if name == "flower-simulation":
        return SimulationEngine(
            ray_address=config.federation.ray_address, gpus_per_client=gpus_per_client(config.train.device)
        )
    if name == "flower":
        raise ConfigError(
            "federation.engine",
            "'flower' runs on a SuperLink: use `fedmosaic run --superlink HOST:PORT` or `fedmosaic deploy`",
        )
    return None


def check_trained(runs: list[dict[str, Any]]) -> None:
    """Refuse results in which a run trained no round (``rounds_trained`` 0).

    Raises
    ------
    UntrainedRunError
        Naming the first such run and why its first round was skipped: its model
        is its initial one, and its metrics measure nothing learned.

    Examples
    --------
    >>> check_trained([{"name": "a", "rounds_trained": 1, "history": [{"round": 1}]}])
    >>> check_trained([{"name": "a", "rounds_trained": 0, "history": [{"round": 1, "reason": "0 valid replies"}]}])
    Traceback (most recent call last):
    ...
    fedmosaic.errors.UntrainedRunError: run 'a' trained no round (1 of 1 skipped; round 1: 0 valid replies): it has no result to report
    """
    for run in runs:
        if run["rounds_trained"] == 0:
            history = run["history"]
            first = next((row for row in history if row.get("reason")), None)
            why = f"; round {first['round']}: {first['reason']}" if first is not None else ""
            raise UntrainedRunError(
                f"run '{run['name']}' trained no round ({len(history)} of {len(history)} skipped{why}):"
                " it has no result to report"
            )


def rounds_to_target(history: list[dict[str, Any]], target: float | None) -> int | None:
    """The first round whose ``accuracy`` reaches ``target`` (``None``: no target, or never reached).

    Examples
    --------
    >>> rows = [{"round": 1, "metrics": {"accuracy": 0.5}}, {"round": 2, "metrics": {"accuracy": 0.9}}]
    >>> rounds_to_target(rows, 0.8), rounds_to_target(rows, 0.95)
    (2, None)
    """
    if target is None:
        return None
    for row in history:
        if row["metrics"].get("accuracy", -1.0) >= target:
            return int(row["round"])
    return None


def _final_metrics(history: list[dict[str, Any]]) -> dict[str, float]:
    for row in reversed(history):
        if row["metrics"]:
            return dict(row["metrics"])
    return {}
