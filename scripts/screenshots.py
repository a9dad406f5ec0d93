"""Regenerate the screenshots of the report and of the explorer in docs/images/.

Run after ``make demo`` (it writes ``runs/demo``)::

    python scripts/screenshots.py [RUN_DIR]

The report's top (its answer, the fused graph) and the explorer with one
concept set are captured in Debian's chromium, driven by Playwright exactly as
the browser tests drive it. The explorer is started with ``fedmosaic explore
RUN_DIR --port 0`` and stopped at the end.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from playwright.sync_api import Page, sync_playwright

ROOT = Path(__file__).resolve().parents[1]
IMAGES = ROOT / "docs" / "images"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
VIEWPORT = {"width": 1280, "height": 520}
"""The explorer's page is captured whole (``full_page``); this height only bounds it from below."""
REPORT_HEIGHT = 1700
"""Pixels of the report captured from its top: the answer and the fused graph."""
INTERVENTION = ("smoke", "yes")
"""The concept value the explorer's screenshot shows set."""


def report_screenshot(page: Page, run_dir: Path, out: Path) -> None:
    """Capture the top of ``run_dir``'s report."""
    page.set_viewport_size({"width": VIEWPORT["width"], "height": REPORT_HEIGHT})
    page.goto((run_dir / "report.html").resolve().as_uri())
    page.screenshot(path=out)


def explorer_screenshot(page: Page, run_dir: Path, out: Path) -> None:
    """Start the explorer on ``run_dir``, set :data:`INTERVENTION` and capture the page."""
    process = subprocess.Popen(
        [sys.executable, "-c", "from fedmosaic.cli import main; main()", "explore", str(run_dir), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        url = re.search(r"http://127\.0\.0\.1:\d+/", line)
        if url is None:
            raise SystemExit(f"fedmosaic explore did not start: {line.strip()}")
        page.set_viewport_size(VIEWPORT)
        page.goto(url.group(0))
        page.wait_for_selector("body[data-ready='']")
        concept, value = INTERVENTION
        page.click(f"[data-testid='set-{concept}-{value}']")
        page.wait_for_selector(f"body[data-ready='{concept}={value}']")
        page.screenshot(path=out, full_page=True)
    finally:
        process.terminate()
        process.wait(timeout=30)


def main() -> None:
    run_dir = Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "runs" / "demo")
    if not (run_dir / "report.html").is_file():
        raise SystemExit(f"{run_dir}: no report.html; run `make demo` first or pass a run folder")
    IMAGES.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport=VIEWPORT)
        report_screenshot(page, run_dir, IMAGES / "report.png")
        explorer_screenshot(page, run_dir, IMAGES / "explore.png")
        browser.close()
    print(f"wrote {IMAGES / 'report.png'} and {IMAGES / 'explore.png'}")


if __name__ == "__main__":
    main()
