"""docs/results/vfl/views.md is printed from its committed JSON (``scripts/vfl_views.py``)."""

import json
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[2]
RESULT = REPO / "docs" / "results" / "vfl-views.json"
PAGE = REPO / "docs" / "results" / "vfl" / "views.md"


def test_the_page_shows_the_table_of_the_committed_result(repository_script: Callable[[str], ModuleType]) -> None:
    # Prepare
    script = repository_script("scripts/vfl_views.py")
    document = json.loads(RESULT.read_text(encoding="utf-8"))

    # Execute
    table = script.markdown_table(document)

    # Assert
    assert table in PAGE.read_text(encoding="utf-8"), (
        f"{PAGE.name} is stale; run: python scripts/vfl_views.py --table docs/results/vfl-views.json"
    )


def test_every_run_has_a_reading_per_seed_in_both_settings() -> None:
    # Prepare
    document = json.loads(RESULT.read_text(encoding="utf-8"))

    # Execute
    counts = {len(values) for setting in document["accuracy"].values() for values in setting.values()}

    # Assert
    assert counts == {len(document["seeds"])}
    assert list(document["accuracy"]["views"]) == list(document["accuracy"]["patches"])
