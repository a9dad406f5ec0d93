"""The HTML report in a real browser (Debian's chromium): tables fit the page, every figure loads."""

import json
from pathlib import Path
from typing import Any

import pytest

from fedmosaic.report import write_report

pytestmark = pytest.mark.xdist_group("small_fcm_run")  # one small trained run per worker

RESULTS = Path(__file__).parents[2] / "docs" / "results"

FITS = """() => [...document.querySelectorAll('table')].map(table => ({
    table: [table.scrollWidth, table.clientWidth],
    container: [table.parentElement.scrollWidth, table.parentElement.clientWidth],
}))"""
FIGURES = """() => [...document.images].map(image => ({
    loaded: image.complete && image.naturalWidth > 0, alt: image.alt,
}))"""


@pytest.fixture(scope="module")
def reports(small_fcm_run: Path, results: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The small F-CMs run's report, a horizontal run's report and the committed F-CMs grid's (a wide table)."""
    grid, horizontal = tmp_path_factory.mktemp("grid"), tmp_path_factory.mktemp("horizontal")
    write_report(json.loads((RESULTS / "fcm-table-asia.json").read_text(encoding="utf-8")), grid)
    write_report(results, horizontal)
    return [small_fcm_run / "report.html", horizontal / "report.html", grid / "report.html"]


@pytest.mark.parametrize("width", [1280, 800])
def test_every_table_fits_the_page_and_every_figure_loads(chromium: Any, reports: list[Path], width: int) -> None:
    for report in reports:
        # Prepare
        page = chromium.new_page(viewport={"width": width, "height": 900})

        # Execute
        page.goto(report.as_uri())
        tables = page.evaluate(FITS)
        figures = page.evaluate(FIGURES)
        page.close()

        # Assert
        assert tables, report
        for found in tables:
            assert found["table"][0] <= found["table"][1], (report, found)
            assert found["container"][0] <= found["container"][1], (report, found)
        assert figures, report
        assert all(figure["loaded"] and figure["alt"] for figure in figures), (report, figures)
