"""One run against the best other run, cell by cell."""

import pytest

from fedmosaic.errors import ConfigError
from fedmosaic.experiments.comparison import compare_with_best_other
from fedmosaic.experiments.config import GridSection, load_config
from fedmosaic.report.grid_content import comparison_blocks

GRID = GridSection(axes={"data": ["a", "b"], "test": ["x"], "seed": [0, 1]}, rows="data", columns="test", compare="New")


def entry(data: str, seed: int, new: float, old: float, other: float) -> dict:
    runs = [{"name": "New", "accuracy": new}, {"name": "Old", "accuracy": old}, {"name": "Other", "accuracy": other}]
    return {"values": {"data": data, "test": "x", "seed": seed}, "runs": runs}


def test_cells_average_seeds_and_count_where_the_run_is_best() -> None:
    # Prepare: in cell a New wins by 0.1 on average; in cell b Other wins by 0.2
    entries = [
        entry("a", 0, 0.8, 0.6, 0.5),
        entry("a", 1, 0.6, 0.6, 0.5),
        entry("b", 0, 0.5, 0.6, 0.7),
        entry("b", 1, 0.5, 0.6, 0.7),
    ]

    # Execute
    comparison = compare_with_best_other(GRID, entries)

    # Assert
    assert comparison is not None
    assert (comparison["count"], comparison["best"]) == (2, 1)
    assert comparison["mean_margin"] == pytest.approx((0.1 - 0.2) / 2)
    cells = {c["cell"]["data"]: c for c in comparison["cells"]}
    assert cells["a"]["best_other"] == "Old"
    assert cells["a"]["margin"] == pytest.approx(0.1)
    assert cells["b"]["best_other"] == "Other"
    assert cells["b"]["margin"] == pytest.approx(-0.2)
    assert comparison["by_axis"]["data"]["b"] == {"count": 1, "best": 0, "mean_margin": pytest.approx(-0.2)}
    assert "seed" not in comparison["by_axis"]


def test_no_compared_run_means_no_comparison_and_no_report_section() -> None:
    grid = GRID.model_copy(update={"compare": None})
    assert compare_with_best_other(grid, [entry("a", 0, 1, 0, 0)]) is None
    assert comparison_blocks(None) == ()


def test_a_grid_of_the_compared_run_alone_has_no_comparison() -> None:
    # Prepare: every point holds only the compared run
    entries = [{"values": {"data": "a", "test": "x", "seed": 0}, "runs": [{"name": "New", "accuracy": 0.8}]}]

    # Execute
    comparison = compare_with_best_other(GRID, entries)

    # Assert
    assert comparison is None


def test_the_report_lists_the_tally_and_every_cell() -> None:
    comparison = compare_with_best_other(GRID, [entry("a", 0, 0.8, 0.6, 0.5)])
    _heading, _, tally, *_, cells = comparison_blocks(comparison)
    assert tally.rows[0] == ("all", "", "1", "1", "+20.0")
    assert cells.rows[0][-1] == "+20.0"


def test_the_compared_run_must_exist() -> None:
    source = {
        "name": "g",
        "runs": [{"name": "FedAvg", "method": "fedavg"}],
        "grid": {"axes": {"seed": [0, 1]}, "rows": "seed", "columns": "seed", "compare": "FedCFA"},
    }
    with pytest.raises(ConfigError, match=r"grid\.compare: must be the name of a run"):
        load_config(source)


def test_several_compared_metrics_are_one_more_cell_axis() -> None:
    grid = GRID.model_copy(update={"compare_metrics": ["accuracy", "accuracy_hard"]})
    point = entry("a", 0, 0.8, 0.6, 0.5)
    point["runs"][0]["accuracy_hard"], point["runs"][1]["accuracy_hard"] = 0.1, 0.4
    comparison = compare_with_best_other(grid, [point])
    assert comparison is not None
    assert comparison["by_axis"]["metric"]["accuracy_hard"] == {
        "count": 1,
        "best": 0,
        "mean_margin": pytest.approx(-0.3),
    }
    assert (comparison["count"], comparison["best"]) == (2, 1)
