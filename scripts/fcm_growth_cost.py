r"""Extract from an ``fcm-table`` grid's output folder the parameter change of every growth.

For every growth of every run of every point: the run's name, network,
family and seed, the growth's round, fedmosaic's change ratio (parameters added or in
reshaped or rewired tensors over the parameters before) and the paper's
``max(0, P_after - P_before) / P_before``. The result is a small JSON
committed under ``docs/results/``; ``scripts/fcm_tables.py`` prints the
studies page's table from it.

The ratios depend only on the architecture before and after a growth, which
the concepts and the fused graph fix; neither the round at which the late
clients join nor training changes them. So the grid can run cut short::

    fedmosaic run fcm-table --jobs 1 --data-dir DATA --out GRID_OUT \
      --set 'runs=[{name = "F-CMs", method = "fcm"}]' \
      --set concepts.join_round=2 --set federation.rounds=2
    python scripts/fcm_growth_cost.py GRID_OUT docs/results/fcm-growth-cost.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from fcm_selection_concepts import FAMILY_KEY, grid_runs


def growth_records(values: dict[str, Any], run: dict[str, Any]) -> list[dict[str, Any]]:
    """One record per growth of one run of a grid point (``values``: the point's grid values)."""
    return [
        {
            "run": run["name"],
            "network": values["data.network"],
            "family": values[FAMILY_KEY],
            "seed": values["seed"],
            "round": change["round"],
            "change_ratio": change["ratio"],
            "growth_ratio": change["growth_ratio"],
        }
        for change in run.get("artifacts", {}).get("changes", [])
    ]


def extract(grid_out: Path) -> dict[str, Any]:
    """The growths of every run of the grid in ``grid_out``, with the grid's configuration.

    Parameters
    ----------
    grid_out
        A grid's output folder: its ``results.json``, ``config.toml`` and one folder per point.

    Returns
    -------
    dict
        ``config`` (the grid's configuration as run) and ``growths`` (one record per growth).
    """
    growths = [record for values, run in grid_runs(grid_out) for record in growth_records(values, run)]
    return {"config": (grid_out / "config.toml").read_text(encoding="utf-8"), "growths": growths}


def main() -> None:
    """Write the extraction of the grid folder given first to the file given second."""
    if len(sys.argv) != 3:
        sys.exit("usage: python scripts/fcm_growth_cost.py GRID_OUT OUTPUT.json")
    extraction = extract(Path(sys.argv[1]))
    Path(sys.argv[2]).write_text(json.dumps(extraction, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
