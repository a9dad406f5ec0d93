"""The robustness results page is printed from its committed JSON."""

import json
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "docs" / "results" / "robustness.json"
PAGE = REPO / "docs" / "results" / "robustness.md"


@pytest.fixture(scope="module")
def benchmark(repository_script: Callable[[str], ModuleType]) -> ModuleType:
    return repository_script("benchmarks/robustness.py")


def test_the_page_shows_the_tables_of_its_committed_json(benchmark: ModuleType) -> None:
    # Prepare
    document = json.loads(DATA.read_text())

    # Execute
    page = benchmark.markdown(document)

    # Assert
    assert PAGE.read_text() == page, (
        f"{PAGE.name} is stale; run: python benchmarks/robustness.py --privacy --out {DATA.relative_to(REPO)} "
        f"--markdown {PAGE.relative_to(REPO)}"
    )
