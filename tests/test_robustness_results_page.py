"""The robustness results page is printed from its committed JSON."""

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "benchmarks" / "robustness.py"
DATA = REPO / "docs" / "results" / "robustness.json"
PAGE = REPO / "docs" / "results" / "robustness.md"


@pytest.fixture(scope="module")
def benchmark() -> ModuleType:
    sys.path.insert(0, str(SCRIPT.parent))  # the script imports its folder's helpers
    try:
        spec = importlib.util.spec_from_file_location("robustness_benchmark", SCRIPT)
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(SCRIPT.parent))


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
