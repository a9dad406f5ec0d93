"""Run a grid of experiments and tabulate one final metric across it."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from fedmosaic.experiments.comparison import compare_with_best_other
from fedmosaic.experiments.config import ExperimentConfig, GridSection, grid_points, load_config
from fedmosaic.experiments.outputs import POINTS, claim_out_dir, finish_run, summary_rows
from fedmosaic.experiments.processes import job_cores, run_in_processes
from fedmosaic.experiments.progress import ProgressSink, SilentProgress
from fedmosaic.version import __version__


def run_grid(
    run_point: Callable[..., dict[str, Any]],
    config: ExperimentConfig,
    out_dir: Path,
    *,
    data_dir: str | Path | None = None,
    resume: bool = False,
    overwrite: bool = False,
    progress: ProgressSink | None = None,
    cores: int | None = None,
    jobs: int = 1,
) -> dict[str, Any]:
    """Run the experiment at every point of its grid, then write the table.

    Each point is a complete experiment in ``points/<nn>-<values>/`` (its own
    results, report and checkpoints, so ``--resume`` continues a grid where
    it stopped), run by ``run_point`` (the runner's ``run_experiment``).
    ``results.json`` holds every point's final metrics and the
    table; ``report.md`` / ``report.html`` show the table. With ``jobs`` > 1
    the points run in that many parallel processes sharing ``cores``, and
    the jobs the points leave over run each point's runs side by side
    (:func:`point_jobs`); the outputs are the same.
    """
    assert config.grid is not None
    progress = progress or SilentProgress()
    document = config.document()
    points = grid_points(document)
    with claim_out_dir(out_dir, document, resume=resume, overwrite=overwrite) as folder:
        if folder.finished is not None:
            return folder.finished
        return _run_points(run_point, config, folder.path, document, points, data_dir, resume, progress, cores, jobs)


def _run_points(
    run_point: Callable[..., dict[str, Any]],
    config: ExperimentConfig,
    out_dir: Path,
    document: dict[str, Any],
    points: list[tuple[dict[str, Any], dict[str, Any]]],
    data_dir: str | Path | None,
    resume: bool,
    progress: ProgressSink,
    cores: int | None,
    jobs: int,
) -> dict[str, Any]:
    """Run every point into the claimed folder ``out_dir``, then write the grid's results there."""
    assert config.grid is not None
    folders = [Path(POINTS) / _slug(index, values) for index, (values, _) in enumerate(points)]
    labels = [", ".join(f"{k}={v}" for k, v in values.items()) for values, _ in points]
    share = job_cores(cores, jobs, len(points))
    tasks = [
        partial(
            _run_point,
            run_point,
            source,
            out_dir / folder,
            data_dir=data_dir,
            resume=resume and (out_dir / folder).exists(),  # a point not started yet starts now
            cores=share,
            jobs=point_jobs(jobs, len(points)),
        )
        for (_, source), folder in zip(points, folders, strict=True)
    ]
    if jobs > 1 and len(tasks) > 1:
        progress.start_point(0, len(points), f"{min(jobs, len(points))} points at a time")

        def done(task: int, count: int) -> None:
            progress.start_point(count, len(points), f"finished: {labels[task]}")

        rows = run_in_processes(tasks, jobs, progress, labels=[f"p{i}" for i in range(len(tasks))], on_done=done)
    else:
        rows = []
        for index, task in enumerate(tasks):
            progress.start_point(index, len(points), labels[index])
            rows.append(task(progress))
    entries: list[dict[str, Any]] = [
        {"values": values, "folder": folder.as_posix(), "runs": point_rows}
        for (values, _), folder, point_rows in zip(points, folders, rows, strict=True)
    ]
    results = {
        "fedmosaic_version": __version__,
        "experiment": config.name,
        "description": config.description,
        "seed": config.seed,
        "config": document,
        "grid": config.grid.model_dump(mode="json"),
        "points": entries,
        "table": grid_table(config.grid, entries),
    }
    comparison = compare_with_best_other(config.grid, entries, axis_label)
    if comparison is not None:
        results["comparison"] = comparison
    summary = {
        "experiment": config.name,
        "rows": [{**entry["values"], **run} for entry in entries for run in entry["runs"]],
    }
    finish_run(out_dir, results, summary)
    return results


def _run_point(
    run_point: Callable[..., dict[str, Any]],
    source: dict[str, Any],
    out_dir: Path,
    progress: ProgressSink,
    *,
    data_dir: str | Path | None,
    resume: bool,
    cores: int | None,
    jobs: int,
) -> list[dict[str, Any]]:
    """Run one point, its runs in ``jobs`` parallel processes, and return its summary rows."""
    results = run_point(
        load_config(source), out_dir, data_dir=data_dir, resume=resume, progress=progress, cores=cores, jobs=jobs
    )
    rows: list[dict[str, Any]] = summary_rows(results)["rows"]
    return rows


def point_jobs(jobs: int, points: int) -> int:
    """The parallel processes each point gives its runs: the jobs the points leave over.

    A grid with fewer points than ``jobs`` would leave processes idle, so
    each point runs its runs side by side in its share of them.

    Examples
    --------
    >>> point_jobs(2, 1), point_jobs(2, 2), point_jobs(4, 2), point_jobs(1, 1), point_jobs(2, 5)
    (2, 1, 2, 1, 1)
    """
    return max(1, jobs // max(1, points))


def grid_table(grid: GridSection, entries: list[dict[str, Any]]) -> dict[str, Any]:
    """The table of a grid: one row per (row value, run), one column per column value.

    Each cell is ``metric ± std (secondary %)`` in percent, over the points
    that share the row and column value (e.g. seeds); with a single point the
    run's own ``<metric>_std`` (local: over clients) is shown, or no spread
    when the run has none.
    """
    runs = [run["name"] for run in entries[0]["runs"]] if entries else []
    header = [grid.rows, "run", *(axis_label(v) for v in grid.axes[grid.columns])]
    rows = []
    for row_value in grid.axes[grid.rows]:
        for name in runs:
            cells = [axis_label(row_value), name]
            for column_value in grid.axes[grid.columns]:
                finals = [
                    run
                    for entry in entries
                    if entry["values"][grid.rows] == row_value and entry["values"][grid.columns] == column_value
                    for run in entry["runs"]
                    if run["name"] == name
                ]
                cells.append(_cell(finals, grid.metric, grid.secondary))
            rows.append(cells)
    return {"header": header, "rows": rows, "metric": grid.metric, "secondary": grid.secondary}


def axis_label(value: Any) -> str:
    """How an axis value is shown: tables as ``key=value`` pairs.

    Examples
    --------
    >>> axis_label({"scheme": "dirichlet", "alpha": 0.6}), axis_label(3)
    ('scheme=dirichlet alpha=0.6', '3')
    """
    if isinstance(value, dict):
        return " ".join(f"{k}={v}" for k, v in value.items())
    return str(value)


def _cell(finals: list[dict[str, Any]], metric: str, secondary: str | None) -> str:
    values = [f[metric] for f in finals if metric in f]
    if not values:
        return "—"
    std = float(np.std(values)) if len(values) > 1 else finals[0].get(f"{metric}_std")
    text = f"{100 * np.mean(values):.1f}" + ("" if std is None else f" ± {100 * float(std):.1f}")
    extra = [f[secondary] for f in finals if secondary and secondary in f]
    if extra:
        text += f" ({100 * np.mean(extra):.0f}%)"
    return text


def _slug(index: int, values: dict[str, Any]) -> str:
    text = "-".join(axis_label(v) for v in values.values())
    return f"{index:03d}-" + (re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-") or "point")
