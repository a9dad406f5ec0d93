"""The FedCFA results page prints its tables from the committed JSON (``scripts/fedcfa_tables.py``)."""

import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "results" / "fedcfa.md"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("fedcfa_tables", ROOT / "scripts" / "fedcfa_tables.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_table_of_the_page_is_what_the_script_prints_from_the_json() -> None:
    # Prepare
    script = _script()
    page = PAGE.read_text(encoding="utf-8")
    # Execute
    tables = script.tables()
    # Assert
    missing = [t.splitlines()[0] for t in tables if t not in page]
    assert not missing, f"stale tables in {PAGE.name}; run: python scripts/fedcfa_tables.py"


def test_the_page_names_the_variant_the_validation_rule_chooses() -> None:
    # Prepare
    script = _script()
    # Execute
    chosen = script.recommended(script.load_runs())
    # Assert
    assert f"**{chosen}** (chosen)" in PAGE.read_text(encoding="utf-8")
