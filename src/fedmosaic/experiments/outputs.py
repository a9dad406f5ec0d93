"""The output folder of an experiment: what it holds, who may write it, and when it is complete.

``results.json`` is written last and atomically: a folder without it holds an
unfinished run (its checkpoints let ``--resume`` continue it). A run holds
the folder's lock while it runs (:func:`claim_out_dir`), so no two runs share
a folder, and ``--overwrite`` replaces a run only once the new one is complete.
"""

from __future__ import annotations

import json
import shutil
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomli_w

from fedmosaic.atomic import atomic_write_bytes, write_json
from fedmosaic.errors import ConfigError, FedmosaicError, UntrainedRunError
from fedmosaic.experiments.config import EXECUTION_ONLY, result_fingerprint
from fedmosaic.experiments.lock import LOCK_FILE, locked_folder
from fedmosaic.report import write_report

RESULTS = "results.json"
SUMMARY = "summary.json"
CHECKPOINTS = "checkpoints"
POINTS = "points"
CONFIG = "config.toml"
_PRODUCTS = (
    RESULTS,
    SUMMARY,
    "report.md",
    "report.html",
    "plots",
    CHECKPOINTS,
    POINTS,
    CONFIG,
    "messages",
    "model",
)


STAGING = ".replacing"
"""Where ``--overwrite`` writes the new run, inside the output folder, until it completes."""
_REPLACED = ".replaced"
"""Where the old run's files wait, during the replacement, to be deleted."""
_MOVING_IN = ".moving-in"
"""Marker in ``.replaced``: every old file is out, the new run's files are moving in."""
_DISCARDED = ".discarded"
"""Name ``.replaced`` takes, once the replacement is done, while it is deleted."""


def check_out_dir(out_dir: Path, *, resume: bool, overwrite: bool) -> None:
    """Refuse at once what the run would refuse in ``out_dir``; writes nothing.

    Raises
    ------
    ConfigError
        If both ``resume`` and ``overwrite`` are set, if ``out_dir`` is a file,
        or if it holds a run and neither is set.
    """
    if resume and overwrite:
        raise ConfigError("--resume", "cannot be combined with --overwrite")
    if out_dir.exists() and not out_dir.is_dir():
        raise ConfigError("--out", f"{out_dir} exists and is not a folder")
    if holds_run(out_dir) and not (resume or overwrite):
        raise ConfigError(
            "--out",
            f"{out_dir} already holds a run; pass --resume to continue it or --overwrite to replace it",
        )
    if resume and not out_dir.exists():
        raise ConfigError(
            "--resume", f"{out_dir} does not exist: there is no run to resume; leave out --resume to start one"
        )
    interrupted = (out_dir / _REPLACED).exists()  # a replacement that the claim completes
    if resume and not (holds_run(out_dir) or (out_dir / CONFIG).exists() or interrupted):
        raise ConfigError(
            "--resume", f"{out_dir} holds no run to resume (no {CONFIG}); leave out --resume to start one there"
        )


def holds_run(out_dir: Path) -> bool:
    """Whether ``out_dir`` holds a run, finished or not."""
    return any((out_dir / name).exists() for name in (RESULTS, CHECKPOINTS, POINTS))


@dataclass(frozen=True)
class RunFolder:
    """The folder a run writes to, once claimed (:func:`claim_out_dir`).

    Parameters
    ----------
    path : Path
        Where to write: the output folder, or its staging folder under ``--overwrite``.
    finished : dict or None
        The results when ``--resume`` finds the run already complete (nothing to do).
    """

    path: Path
    finished: dict[str, Any] | None


@contextmanager
def claim_out_dir(out_dir: Path, document: dict[str, Any], *, resume: bool, overwrite: bool) -> Iterator[RunFolder]:
    """Lock ``out_dir`` for the run's life and give the run the folder to write to.

    The folder's lock (:mod:`fedmosaic.experiments.lock`) keeps a second run
    out. ``resume`` continues the run there only if it is the same experiment
    (its recorded ``config.toml`` has the same name and configuration, up to
    keys that never change results such as ``federation.workers``).
    ``overwrite`` runs the new experiment in ``<out_dir>/.replacing/`` and
    moves it in place of the old run only when the block completes; if the
    new run fails, the old run stays as it was. ``config.toml`` records
    ``document``. A folder holding only the ``config.toml`` of a run killed
    before its first checkpoint is taken over by the same experiment only. A
    run that trained no round (:class:`~fedmosaic.errors.UntrainedRunError`)
    leaves a folder that held no run as it was.

    Raises
    ------
    ConfigError
        As :func:`check_out_dir`; if another run holds the folder; if the
        folder records another experiment (with ``resume``, or holding only
        its configuration).
    """
    check_out_dir(out_dir, resume=resume, overwrite=overwrite)
    if out_dir.is_dir() and not (overwrite or holds_run(out_dir)):  # refused before the lock: nothing is written
        _check_same_experiment(out_dir, document, "--resume" if resume else "--out")
    created = not out_dir.exists()
    with locked_folder(out_dir):
        _finish_interrupted_replacement(out_dir)
        check_out_dir(out_dir, resume=resume, overwrite=overwrite)  # a run may have finished meanwhile
        if resume and holds_run(out_dir):
            _check_same_experiment(out_dir, document, "--resume")
            if (out_dir / RESULTS).exists():
                yield RunFolder(out_dir, read_results(out_dir))
                return
        elif not overwrite:  # only the configuration of a run killed before its first checkpoint, if anything
            _check_same_experiment(out_dir, document, "--resume" if resume else "--out")
        if not (overwrite and holds_run(out_dir)):
            fresh = not holds_run(out_dir)
            _write_config(out_dir, document)
            try:
                yield RunFolder(out_dir, None)
            except UntrainedRunError:
                if fresh:
                    _discard(out_dir, created)
                raise
            return
        staging = out_dir / STAGING
        shutil.rmtree(staging, ignore_errors=True)  # a replacement that failed before
        _write_config(staging, document)
        try:
            yield RunFolder(staging, None)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        _replace(out_dir, staging)


def _discard(out_dir: Path, created: bool) -> None:
    """Remove what a run that trained nothing wrote in ``out_dir`` (which held no run); the folder too if it made it."""
    for name in _PRODUCTS:
        path = out_dir / name
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
    if created and [entry.name for entry in out_dir.iterdir()] == [LOCK_FILE]:
        (out_dir / LOCK_FILE).unlink()
        out_dir.rmdir()


def _check_same_experiment(out_dir: Path, document: dict[str, Any], field: str) -> None:
    recorded_file = out_dir / CONFIG
    try:
        recorded = tomllib.loads(recorded_file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return  # checkpoints without a recorded configuration: the checkpoints' own fingerprints decide
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise FedmosaicError(f"{field}: cannot read {recorded_file}: {error}") from None
    mine, theirs = result_fingerprint(document), result_fingerprint(recorded)
    if recorded.get("name") != document.get("name") or mine != theirs:
        differs = first_difference(recorded, document)
        where = f", first at {differs}" if differs else ""
        raise ConfigError(
            field,
            f"{out_dir} holds the experiment {recorded.get('name')!r} (configuration {theirs}), not"
            f" {document.get('name')!r} (configuration {mine}{where}); resume it with its own configuration,"
            " or pass --overwrite or another --out",
        )


def first_difference(recorded: Any, given: Any, path: str = "") -> str | None:
    """The first dotted key where two configuration documents differ (``model.code_sha256``), if any.

    Keys that change how a run executes, never its numbers (``federation.workers``), are not compared.

    Examples
    --------
    >>> first_difference({"model": {"kind": "mlp", "hidden": [64]}}, {"model": {"kind": "mlp", "hidden": [32]}})
    'model.hidden'
    >>> first_difference({"federation": {"workers": 1}}, {"federation": {"workers": 4}}) is None
    True
    """
    if isinstance(recorded, dict) and isinstance(given, dict):
        for key in sorted(set(recorded) | set(given)):
            dotted = f"{path}.{key}" if path else str(key)
            if path == "federation" and key in EXECUTION_ONLY:
                continue
            found = first_difference(recorded.get(key), given.get(key), dotted)
            if found is not None:
                return found
        return None
    tables = isinstance(recorded, list) and isinstance(given, list) and all(isinstance(v, dict) for v in recorded)
    if tables and len(recorded) == len(given):  # [[runs]]: compared run by run
        for index, (a, b) in enumerate(zip(recorded, given, strict=True)):
            found = first_difference(a, b, f"{path}.{index}")
            if found is not None:
                return found
        return None
    return None if recorded == given else path


def _write_config(folder: Path, document: dict[str, Any]) -> None:
    atomic_write_bytes(folder / CONFIG, tomli_w.dumps(document).encode())


def _replace(out_dir: Path, staging: Path) -> None:
    """Move the completed run in ``staging`` in place of the run's files in ``out_dir``.

    Every step can be interrupted (a kill, a power cut) and taken up again by
    :func:`_finish_interrupted_replacement`: first the old run's files move
    to ``.replaced/`` (all of them out before any new file comes in), then a
    marker records that they are out, then the new run's files move in.
    Each move is a rename, so a file is always whole in one place or the other.
    """
    replaced = out_dir / _REPLACED
    if not (replaced / _MOVING_IN).exists():
        replaced.mkdir(exist_ok=True)
        for name in _PRODUCTS:
            if (out_dir / name).exists():
                (out_dir / name).rename(replaced / name)
        atomic_write_bytes(replaced / _MOVING_IN, b"")
    for entry in staging.iterdir() if staging.exists() else ():
        if entry.name != LOCK_FILE:
            entry.rename(out_dir / entry.name)
    replaced.rename(out_dir / _DISCARDED)
    shutil.rmtree(out_dir / _DISCARDED)
    shutil.rmtree(staging, ignore_errors=True)


def _finish_interrupted_replacement(out_dir: Path) -> None:
    """Complete an ``--overwrite`` whose completed new run was being moved in when the process died.

    The new run was complete (its ``results.json`` in the staging folder, or
    already moved in), so the replacement goes forward rather than back; a
    new run that never completed leaves ``.replaced`` absent and the old run
    untouched.
    """
    shutil.rmtree(out_dir / _DISCARDED, ignore_errors=True)
    if (out_dir / _REPLACED).exists():
        _replace(out_dir, out_dir / STAGING)


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
            "rounds": len(run["history"]),
            "rounds_trained": run.get("rounds_trained"),
            "rounds_to_target": run.get("rounds_to_target"),
        }
        for run in results["runs"]
    ]
    return {"experiment": results["experiment"], "seed": results["seed"], "rows": rows}
