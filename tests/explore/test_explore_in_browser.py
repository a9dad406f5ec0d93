"""End to end: ``fedmosaic explore`` on a small trained run, driven in Debian's chromium."""

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from fedmosaic import load_model

pytestmark = pytest.mark.xdist_group("small_fcm_run")  # one small trained run per worker

STARTUP_S = 120
"""How long the explorer may take to announce its address (imports and loading on a busy machine)."""


@pytest.fixture(scope="module")
def explorer_url(small_fcm_run: Path) -> Iterator[str]:
    """Start ``fedmosaic explore`` on any free port; stop it after the module's tests."""
    process = subprocess.Popen(
        [sys.executable, "-c", "from fedmosaic.cli import main; main()", "explore", str(small_fcm_run), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=os.environ.copy(),
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        found = re.search(r"http://127\.0\.0\.1:\d+/", line)
        assert found, f"explore did not announce its address: {line!r}"
        yield found.group(0)
    finally:
        process.terminate()
        process.wait(timeout=30)


def _values(page: Any, test_id_prefix: str) -> dict[str, float]:
    """The exact values (``data-value``) of the elements whose test id starts with ``test_id_prefix``."""
    return page.evaluate(
        """prefix => Object.fromEntries([...document.querySelectorAll(`[data-testid^="${prefix}"]`)]
                 .map(e => [e.dataset.testid, Number(e.dataset.value)]))""",
        test_id_prefix,
    )


def test_setting_a_concept_shows_the_task_probability_intervene_computes(
    chromium: Any, explorer_url: str, small_fcm_run: Path
) -> None:
    # Prepare
    model = load_model(small_fcm_run)
    examples = pd.read_csv(model.folder / "examples.csv")
    concept, category = "smoke", "yes"  # a root of asia: lung, bronc, either and the task descend from it
    expected = model.intervene(examples.iloc[[0]], {concept: category})
    page = chromium.new_page(viewport={"width": 1400, "height": 900})
    page.goto(explorer_url)
    page.wait_for_selector("body[data-ready='']")
    before = _values(page, "prob-")

    # Execute
    page.click(f"[data-testid='set-{concept}-{category}']")
    page.wait_for_selector(f"body[data-ready='{concept}={category}']")
    task = _values(page, "task-")
    after = _values(page, "prob-")
    page.click("[data-testid='reset']")
    page.wait_for_selector("body[data-ready='']")
    reset = _values(page, "prob-")
    page.close()

    # Assert: the task's probabilities are intervene's, bit for bit
    assert task == {f"task-{name}": float(p) for name, p in zip(model.classes, expected.probabilities[0], strict=True)}
    assert after[f"prob-{concept}-{category}"] == 1.0
    untouched = set(model.concepts) - model.descendants(concept) - {concept}
    assert untouched
    assert all(
        after[f"prob-{node}-{value}"] == before[f"prob-{node}-{value}"]
        for node in untouched
        for value in model.concepts[node]
    )
    assert reset == before


def test_the_page_shows_the_true_networks_answer_and_loads_nothing_from_elsewhere(
    chromium: Any, explorer_url: str
) -> None:
    # Prepare
    page = chromium.new_page()
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))

    # Execute
    page.goto(explorer_url)
    page.wait_for_selector("body[data-ready='']")
    bayes = _values(page, "bayes-")
    page.close()

    # Assert: no concept set, so the true network gives asia's prior P(dysp)
    assert bayes["bayes-yes"] == pytest.approx(0.436, abs=1e-3)
    assert requests
    assert all(url.startswith(explorer_url) for url in requests)
