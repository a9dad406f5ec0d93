"""The F-CMs defaults page shows the tables ``scripts/fcm_defaults.py`` prints, and its verdict holds on the committed runs."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "results" / "fcm" / "defaults.md"


@pytest.fixture(scope="module")
def script(repository_script: Callable[[str], ModuleType]) -> ModuleType:
    return repository_script("scripts/fcm_defaults.py")


def test_every_table_of_the_page_is_printed_from_its_files(script: ModuleType) -> None:
    # Prepare
    page = PAGE.read_text(encoding="utf-8")

    # Execute
    printed = [script.preset_table(), script.swing_table(), script.family_table()]

    # Assert
    missing = [text.splitlines()[0] for text in printed if text not in page]
    assert not missing, f"stale tables (regenerate with python scripts/fcm_defaults.py): {missing}"


def test_under_the_default_insurance_cgm_ends_within_2_points_of_centralized_on_every_seed_without_swinging() -> None:
    # Prepare
    grid = json.loads((ROOT / "docs" / "results" / "fcm" / "defaults-insurance-cgm.json").read_text())

    # Execute
    runs = [{run["name"]: run for run in point["runs"]} for point in grid["points"]]

    # Assert
    assert sorted(point["values"]["seed"] for point in grid["points"]) == [0, 1, 2]
    assert all(abs(r["F-CMs"]["accuracy"] - r["Centralized"]["accuracy"]) <= 0.02 for r in runs)
    assert all(r["F-CMs"]["alternating_rounds"] < 8 for r in runs)
