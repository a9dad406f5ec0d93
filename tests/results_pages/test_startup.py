"""The Start-up section of docs/performance.md shows the tables its scripts print from committed results.

``benchmarks/startup.py --print docs/results/startup.json`` (the commands and
the runs beside the import of PyTorch) and ``scripts/fcm_table_cost.py`` (the
F-CMs main table's cost, from ``docs/results/fcm-kept-table-*.json``).
"""

import json
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "docs" / "results"
PAGE = REPO / "docs" / "performance.md"


def test_the_page_shows_the_tables_of_the_committed_startup_result(
    repository_script: Callable[[str], ModuleType],
) -> None:
    # Prepare
    benchmark = repository_script("benchmarks/startup.py")
    document = json.loads((RESULTS / "startup.json").read_text(encoding="utf-8"))

    # Execute
    tables = benchmark.markdown(document)

    # Assert
    assert tables in PAGE.read_text(encoding="utf-8"), (
        f"{PAGE.name} is stale; run: python benchmarks/startup.py --print docs/results/startup.json"
    )


def test_each_command_s_ratio_is_its_median_over_the_import_of_pytorch_s() -> None:
    # Prepare
    table = json.loads((RESULTS / "startup.json").read_text(encoding="utf-8"))["commands"]["table"]
    anchor = table['python -c "import torch"']

    # Execute
    ratios = {label: row["wall_s"] / anchor["wall_s"] for label, row in table.items()}

    # Assert
    assert ratios == pytest.approx({label: row["wall_vs_torch_import"] for label, row in table.items()})


def test_the_page_shows_the_fcm_table_s_cost_from_its_committed_results(
    repository_script: Callable[[str], ModuleType],
) -> None:
    # Prepare
    script = repository_script("scripts/fcm_table_cost.py")

    # Execute
    table = script.table(RESULTS)

    # Assert
    assert table in PAGE.read_text(encoding="utf-8"), f"{PAGE.name} is stale; run: python scripts/fcm_table_cost.py"
    assert "| all | 60 | 240 |" in table
