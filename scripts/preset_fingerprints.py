"""The final metrics of every preset run cut short, as JSON: a before/after check for refactorings.

Each shipped preset runs at its default seed with ``federation.rounds``
cut to ``--rounds``, every grid cut to the first value of each axis, and
the few keys that would outlast two rounds (a join round, pretraining
epochs) cut with it. The output maps each preset to its runs' final
metrics and bytes, so two checkouts can be compared exactly::

    PYTHONPATH=<before>/src python scripts/preset_fingerprints.py --out before.json
    PYTHONPATH=<after>/src python scripts/preset_fingerprints.py --out after.json
    python scripts/preset_fingerprints.py --compare before.json after.json

``--compare`` prints the presets whose numbers differ and exits 1 if any does.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from fedmosaic.errors import DataFileMissing
from fedmosaic.experiments.config import load_config
from fedmosaic.experiments.overrides import set_path
from fedmosaic.experiments.presets import preset_names, preset_source
from fedmosaic.experiments.runner import run_experiment

CUTS: dict[str, int] = {"concepts.join_round": 2, "train.epochs": 1, "train.pretrain_epochs": 1}
"""Keys cut (to at most this value) where a preset sets them, so that a short run still uses them."""
PARAM_CUTS: dict[str, int] = {"stage1_rounds": 1, "pretrain_rounds": 1, "epochs": 1}
"""Method parameters cut the same way in every run that sets them."""
KEPT = ("name", "method", "setting", "final", "bytes_up_total", "bytes_down_total")
"""What is kept of a run's entry in ``results.json``."""


def cut_short(source: dict[str, Any], rounds: int) -> dict[str, Any]:
    """``source`` with ``rounds`` rounds, each grid axis at its first value and :data:`CUTS` applied."""
    source = json.loads(json.dumps(source))
    source.setdefault("federation", {})["rounds"] = rounds
    if "grid" in source:
        source["grid"]["axes"] = {key: values[:1] for key, values in source["grid"]["axes"].items()}
    for key, value in CUTS.items():
        section, _, name = key.partition(".")
        if name in source.get(section, {}):
            set_path(source, key.split("."), min(value, source[section][name]), key)
    for run in source.get("runs", []):
        params = run.get("params", {})
        params.update({key: min(value, params[key]) for key, value in PARAM_CUTS.items() if key in params})
    return source


def run_fingerprints(document: Any) -> list[dict[str, Any]]:
    """Every run's name, final metrics and bytes found anywhere in a ``results.json`` document.

    A run is a run's entry (with ``final``) or a grid point's summary row
    (its final metrics inline); wall times are left out.
    """
    found = []
    if isinstance(document, dict):
        if "name" in document and "bytes_up_total" in document:
            kept = KEPT if "final" in document else [key for key in document if key != "wall_time_s"]
            found.append({key: document[key] for key in kept if key in document})
        for value in document.values():
            found.extend(run_fingerprints(value))
    elif isinstance(document, list):
        for value in document:
            found.extend(run_fingerprints(value))
    return found


def fingerprint_presets(names: list[str], rounds: int, data_dir: str | None, out: Path) -> None:
    """Write the runs of each preset in ``names``, cut short, by preset name (an error's text where one fails).

    A preset whose data the data folder lacks (``fedcfa-cifar`` without CIFAR-10) is recorded as skipped,
    with the missing file. ``out`` is rewritten after every preset, so an interrupted pass keeps what it finished.
    """
    prints: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as folder:
        for name in names:
            started = time.perf_counter()
            try:
                config = load_config(cut_short(preset_source(name), rounds))
                results = run_experiment(config, Path(folder) / name, data_dir=data_dir)
                prints[name] = run_fingerprints(results)
            except DataFileMissing as error:
                prints[name] = {"skipped": str(error)}
            except Exception as error:  # noqa: BLE001 - a failing preset is recorded, the others still run
                prints[name] = {"error": f"{type(error).__name__}: {error}"}
            out.write_text(json.dumps(prints, indent=1, sort_keys=True) + "\n")
            print(f"{name}: {time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)


def compare(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """The presets whose fingerprints differ (or that one side lacks or failed on), but for those skipped for lack of data."""

    def skipped(side: dict[str, Any], name: str) -> bool:
        value = side.get(name)
        return value is None or (isinstance(value, dict) and "skipped" in value)

    return [
        name
        for name in sorted(set(before) | set(after))
        if not (skipped(before, name) and skipped(after, name))
        and (before.get(name) != after.get(name) or "error" in before.get(name, {"error": ""}))
    ]


def main() -> None:
    """Write the fingerprints of the presets, or compare two files of them."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="Where to write the fingerprints (JSON).")
    parser.add_argument("--rounds", type=int, default=2, help="Rounds of every run (default 2).")
    parser.add_argument("--data-dir", help="Data folder (default: the usual resolution).")
    parser.add_argument("--preset", action="append", help="Only this preset (repeatable; default: all).")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"), help="Compare two files.")
    args = parser.parse_args()
    if args.compare:
        before, after = (json.loads(path.read_text()) for path in args.compare)
        differing = compare(before, after)
        skipped = sorted(name for name, value in after.items() if isinstance(value, dict) and "skipped" in value)
        print(f"{len(before)} presets before, {len(after)} after; differing: {', '.join(differing) or 'none'}")
        if skipped:
            print(f"skipped for lack of their data: {', '.join(skipped)}")
        sys.exit(1 if differing else 0)
    if args.out is None:
        parser.error("--out is needed unless --compare is given")
    fingerprint_presets(args.preset or preset_names(), args.rounds, args.data_dir, args.out)


if __name__ == "__main__":
    main()
