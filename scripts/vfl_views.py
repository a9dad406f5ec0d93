"""FALSE-VFL and LASER-VFL on parties' own views (the ``views`` example) and on the image-patch stand-in, over seeds.

``--run OUT.json`` copies the examples into a scratch folder and runs, for
each seed, the ``views`` example as shipped (three cameras' ``.npz`` views of
scikit-learn's digits, each camera's own CNN against the MLP, and Local) and
its stand-in: the same runs on the same digits cut into 2x2 image patches by
``[vertical]`` (four parties, 300 labels, half the passive blocks missing at
random in training). ``--table OUT.json`` prints the page's table from the
file.

Run from the repository root: ``python scripts/vfl_views.py --run
docs/results/vfl-views.json``, then ``python scripts/vfl_views.py --table
docs/results/vfl-views.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import tomllib
from pathlib import Path
from typing import Any

SETTINGS = ("views", "patches")
"""The two settings: the cameras' own views, and the image-patch stand-in."""
STAND_IN = {"tables": None, "data": {"dataset": "digits"}, "vertical": {"label_budget": 300}}
"""What the stand-in changes in the views example: the built-in digits cut into patches instead of the cameras' files."""


def stand_in(views: dict[str, Any]) -> dict[str, Any]:
    """The views example's configuration with the cameras' files replaced by the patch stand-in (same runs and rounds).

    Examples
    --------
    >>> stand_in({"name": "views", "tables": {"kind": "vertical"}, "runs": []})["vertical"]
    {'label_budget': 300}
    """
    config = {key: value for key, value in views.items() if key != "tables"}
    return config | {"name": "views-patches"} | {k: v for k, v in STAND_IN.items() if v is not None}


def run(out: Path, seeds: list[int]) -> None:
    """Run both settings for every seed and write the accuracies, configurations and command to ``out``."""
    import tomli_w

    import fedmosaic
    from fedmosaic.examples import copy_examples

    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        copy_examples(folder)
        experiment = folder / "views" / "views.toml"
        views = tomllib.loads(experiment.read_text())
        patches = folder / "views" / "patches.toml"
        configs = {"views": views, "patches": stand_in(views)}
        patches.write_text(tomli_w.dumps(configs["patches"]))
        accuracies: dict[str, dict[str, list[float]]] = {setting: {} for setting in SETTINGS}
        for setting, path in (("views", experiment), ("patches", patches)):
            for seed in seeds:
                results = fedmosaic.run(path, out=folder / f"{setting}-{seed}", seed=seed, progress=False)
                for row in json.loads((results.out / "results.json").read_text())["runs"]:
                    accuracies[setting].setdefault(row["name"], []).append(row["final"]["accuracy"])
    document = {
        "command": "python scripts/vfl_views.py --run " + str(out),
        "seeds": seeds,
        "metric": "accuracy (test rows, the round selected on validation rows)",
        "configs": configs,
        "accuracy": accuracies,
    }
    out.write_text(json.dumps(document, indent=1) + "\n")


def markdown_table(document: dict[str, Any]) -> str:
    """Each run's mean accuracy (%) ± its standard deviation over the seeds, in both settings.

    Examples
    --------
    >>> print(markdown_table({"seeds": [0, 1], "accuracy": {"views": {"A": [0.5, 0.7]}, "patches": {"A": [0.6, 0.6]}}}))
    | run | own views (3 cameras) | image patches (stand-in) |
    |---|---|---|
    | A | 60.0 ± 14.1 | 60.0 ± 0.0 |
    """
    lines = ["| run | own views (3 cameras) | image patches (stand-in) |", "|---|---|---|"]
    for name in document["accuracy"]["views"]:
        cells = [_mean_sd(document["accuracy"][setting][name]) for setting in SETTINGS]
        lines.append(f"| {name} | {' | '.join(cells)} |")
    return "\n".join(lines)


def _mean_sd(values: list[float]) -> str:
    """``mean ± sd`` in percent."""
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{100 * statistics.fmean(values):.1f} ± {100 * sd:.1f}"


def main(argv: list[str]) -> None:
    """The command line (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path, help="run both settings and write this JSON file")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--table", type=Path, help="print the page's table from this JSON file")
    args = parser.parse_args(argv)
    if args.run:
        run(args.run, args.seeds)
    if args.table:
        print(markdown_table(json.loads(args.table.read_text())))


if __name__ == "__main__":
    main(sys.argv[1:])
