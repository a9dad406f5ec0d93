"""The secure-aggregation results page is printed from its committed JSON, and states agreement within 0.5 points."""

import json
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "docs" / "results" / "secure-aggregation.json"
PAGE = REPO / "docs" / "results" / "secure-aggregation.md"


@pytest.fixture(scope="module")
def benchmark(repository_script: Callable[[str], ModuleType]) -> ModuleType:
    return repository_script("benchmarks/secure_aggregation.py")


def test_the_page_shows_the_table_of_its_committed_json(benchmark: ModuleType) -> None:
    # Prepare
    document = json.loads(DATA.read_text())

    # Execute
    page = benchmark.markdown(document)

    # Assert
    assert PAGE.read_text() == page, f"{PAGE.name} is stale; run: {benchmark.COMMAND}"


def test_the_secure_runs_end_within_half_a_point_of_the_plain_runs() -> None:
    # Prepare
    document = json.loads(DATA.read_text())

    # Execute
    gaps = {(row["preset"], row["run"]): row["max_accuracy_gap_points"] for row in document["results"]}

    # Assert
    assert set(gaps) == {("digits-fedavg", r) for r in ("FedAvg", "SCAFFOLD", "FedMix")} | {("fcm-asia", "F-CMs")}
    assert all(gap <= 0.5 for gap in gaps.values()), gaps
