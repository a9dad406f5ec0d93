"""The FedCFA results page prints its tables from the committed JSON (``scripts/fedcfa_tables.py``)."""

from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "results" / "fedcfa.md"


@pytest.fixture(scope="module")
def script(repository_script: Callable[[str], ModuleType]) -> ModuleType:
    return repository_script("scripts/fedcfa_tables.py")


def test_every_table_of_the_page_is_what_the_script_prints_from_the_json(script: ModuleType) -> None:
    # Prepare
    page = PAGE.read_text(encoding="utf-8")
    # Execute
    tables = script.tables()
    # Assert
    missing = [t.splitlines()[0] for t in tables if t not in page]
    assert not missing, f"stale tables in {PAGE.name}; run: python scripts/fedcfa_tables.py"


def test_the_page_names_the_variant_the_validation_rule_chooses(script: ModuleType) -> None:
    # Execute
    chosen = script.recommended(script.load_runs())
    # Assert
    assert f"**{chosen}** (chosen)" in PAGE.read_text(encoding="utf-8")
