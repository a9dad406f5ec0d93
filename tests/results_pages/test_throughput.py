"""The throughput tables of docs/performance.md are printed from their committed JSON (``benchmarks/throughput.py``)."""

import json
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "docs" / "results"
PAGE = REPO / "docs" / "performance.md"


@pytest.fixture(scope="module")
def benchmark(repository_script: Callable[[str], ModuleType]) -> ModuleType:
    return repository_script("benchmarks/throughput.py")


def test_the_page_shows_the_table_of_the_committed_throughput_result(benchmark: ModuleType) -> None:
    # Prepare
    document = json.loads((RESULTS / "throughput.json").read_text(encoding="utf-8"))

    # Execute
    table = benchmark.markdown_table(document)

    # Assert
    assert table in PAGE.read_text(encoding="utf-8"), (
        f"{PAGE.name} is stale; run: python benchmarks/throughput.py --table docs/results/throughput.json"
    )


def test_the_committed_result_holds_every_reading_its_medians_come_from() -> None:
    # Prepare
    document = json.loads((RESULTS / "throughput.json").read_text(encoding="utf-8"))

    # Execute
    counts = {len(row[tree]["samples"]) for row in document["workloads"] for tree in ("baseline", "current")}

    # Assert
    assert counts == {document["repeats"]}


def test_outside_the_rounds_is_the_run_wall_less_the_rounds_wall(benchmark: ModuleType) -> None:
    # Prepare
    reading = {"wall_s": 11.2, "rounds": 10, "round_wall_s": 0.54}

    # Execute
    outside = benchmark.outside_rounds(reading)

    # Assert
    assert outside == pytest.approx(5.8)
