"""The F-CMs on images page is what ``scripts/fcm_images.py`` prints from the committed results of the shipped preset."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from fedmosaic.experiments.presets import preset_source

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "results" / "fcm" / "images.md"


@pytest.fixture(scope="module")
def script(repository_script: Callable[[str], ModuleType]) -> ModuleType:
    return repository_script("scripts/fcm_images.py")


def test_the_page_is_printed_from_the_committed_results(script: ModuleType) -> None:
    # Execute
    printed = script.page(script.load())

    # Assert
    assert PAGE.read_text(encoding="utf-8") == printed, (
        "stale page (regenerate with python scripts/fcm_images.py > docs/results/fcm/images.md)"
    )
    assert printed.splitlines()[2].startswith("**Verdict.**")


def test_the_results_are_of_the_preset_as_shipped_over_three_seeds(script: ModuleType) -> None:
    # Prepare
    document = script.load()

    # Assert: every run of the preset at every seed, and the configuration the preset ships today
    assert document["preset"] == preset_source("fcm-shapes")
    assert sorted(document["seeds"]) == ["0", "1", "2"]
    for entries in document["seeds"].values():
        assert [entry["name"] for entry in entries] == list(script.ORDER)


def test_the_shipped_learning_rate_is_the_one_of_the_lowest_validation_loss(script: ModuleType) -> None:
    # Prepare
    rates = script.load()["learning_rates"]

    # Execute
    chosen = min(rates, key=lambda rate: rates[rate]["selection_loss"])

    # Assert
    assert len(rates) >= 2
    assert float(chosen) == preset_source("fcm-shapes")["train"]["lr"]
