"""Write an experiment's report to disk, as Markdown and as HTML."""

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fedmosaic.report.content import build_document
from fedmosaic.report.document import PLOTS_DIR
from fedmosaic.report.grid_content import build_grid_document
from fedmosaic.report.to_html import to_html
from fedmosaic.report.to_markdown import to_markdown

MARKDOWN_FILE = "report.md"
HTML_FILE = "report.html"


def write_report(results: Mapping[str, Any], out_dir: Path) -> tuple[Path, Path]:
    """Write ``report.md``, its figures under ``plots/``, and ``report.html``.

    A grid's results (with a ``"grid"`` entry) get the grid's table instead.

    The Markdown report links its figures; the HTML report embeds them and
    needs no other file.

    Parameters
    ----------
    results : Mapping[str, Any]
        Content of ``results.json``.
    out_dir : Path
        Folder to write into; created if missing. Existing files of the same
        names are replaced, and figures of an earlier report that this one
        does not have are removed from ``plots/``.

    Returns
    -------
    tuple[Path, Path]
        Paths of the Markdown and the HTML report.
    """
    document = build_grid_document(results) if "grid" in results else build_document(results)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = {out_dir / image.path for image in document.images}
    for stale in (out_dir / PLOTS_DIR).glob("*.png"):
        if stale not in written:
            stale.unlink()
    for image in document.images:
        image_path = out_dir / image.path
        image_path.parent.mkdir(exist_ok=True)
        image_path.write_bytes(image.png)
    markdown_path = out_dir / MARKDOWN_FILE
    html_path = out_dir / HTML_FILE
    markdown_path.write_text(to_markdown(document), encoding="utf-8")
    html_path.write_text(to_html(document), encoding="utf-8")
    return markdown_path, html_path
