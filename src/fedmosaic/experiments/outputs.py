"""The output folder of an experiment: what it holds and when it is complete.

``results.json`` is written last and atomically: a folder without it holds an
unfinished run (its checkpoints let ``--resume`` continue it).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import tomli_w

from fedmosaic.atomic import atomic_write_bytes, write_json
from fedmosaic.errors import ConfigError, FedmosaicError
from fedmosaic.report import write_report

RESULTS = "results.json"
SUMMARY = "summary.json"
CHECKPOINTS = "checkpoints"
POINTS = "points"
_PRODUCTS = (
    RESULTS,
    SUMMARY,
    "report.md",
    "report.html",
    "plots",
    CHECKPOINTS,
    POINTS,
    "config.toml",
    "messages",
    "model",
)


def prepare_out_dir(out_dir: Path, *, resume: bool, overwrite: bool) -> dict[str, Any] | None:
    """Make ``out_dir`` ready for a run.

    Returns
    -------
    dict or None
        The finished results when resuming a run that already completed.

    Raises
    ------
    ConfigError
        If the folder holds a run and neither ``resume`` nor ``overwrite`` is set,
        or if both are set.
    """
    if resume and overwrite:
        raise ConfigError("--resume", "cannot be combined with --overwrite")
    if out_dir.exists() and not out_dir.is_dir():
        raise ConfigError("--out", f"{out_dir} exists and is not a folder")
    holds_run = any((out_dir / name).exists() for name in (RESULTS, CHECKPOINTS, POINTS))
    if holds_run and overwrite:
        for name in _PRODUCTS:
            target = out_dir / name
            if target.is_dir():
                shutil.rmtree(target)
            else:
                target.unlink(missing_ok=True)
    elif holds_run and resume and (out_dir / RESULTS).exists():
        return read_results(out_dir)
    elif holds_run and not resume:
        raise ConfigError(
            "--out",
            f"{out_dir} already holds a run; pass --resume to continue it or --overwrite to replace it",
        )
    out_dir.mkdir(parents=True, exist_ok=True)
    return None


def start_run(out_dir: Path, document: dict[str, Any], *, resume: bool, overwrite: bool) -> dict[str, Any] | None:
    """Prepare ``out_dir`` (:func:`prepare_out_dir`) and record the configuration in ``config.toml``.

    Returns
    -------
    dict or None
        The finished results when resuming a run that already completed.
    """
    finished = prepare_out_dir(out_dir, resume=resume, overwrite=overwrite)
    if finished is None:
        atomic_write_bytes(out_dir / "config.toml", tomli_w.dumps(document).encode())
    return finished


def finish_run(out_dir: Path, results: dict[str, Any], summary: dict[str, Any]) -> None:
    """Write ``results.json`` (last, atomically, marking the run complete), ``summary.json`` and the report."""
    write_json(out_dir / RESULTS, results)
    write_json(out_dir / SUMMARY, summary)
    write_report(results, out_dir)


def read_results(out_dir: Path) -> dict[str, Any]:
    """The ``results.json`` of a finished run."""
    try:
        results: dict[str, Any] = json.loads((out_dir / RESULTS).read_text())
        return results
    except (OSError, json.JSONDecodeError) as error:
        raise FedmosaicError(f"cannot read {out_dir / RESULTS}: {error}") from None


def summary_rows(results: dict[str, Any]) -> dict[str, Any]:
    """``summary.json``: one row per run with its final metrics and totals."""
    rows = [
        {
            "name": run["name"],
            "method": run["method"],
            "setting": run["setting"],
            **run["final"],
            "bytes_up_total": run["bytes_up_total"],
            "bytes_down_total": run["bytes_down_total"],
            "wall_time_s": run["wall_time_s"],
            "rounds_to_target": run.get("rounds_to_target"),
        }
        for run in results["runs"]
    ]
    return {"experiment": results["experiment"], "seed": results["seed"], "rows": rows}
