"""Specification of :func:`fedmosaic.report.write_report`."""

import base64
import re
from pathlib import Path
from typing import Any

import pytest

from fedmosaic.report import write_report

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def out_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("run") / "not" / "yet" / "there"


@pytest.fixture(scope="module")
def written(results: dict[str, Any], out_dir: Path) -> tuple[Path, Path]:
    return write_report(results, out_dir)


def test_both_reports_are_written_in_the_folder_which_is_created(written: tuple[Path, Path], out_dir: Path) -> None:
    assert written == (out_dir / "report.md", out_dir / "report.html")
    assert all(path.is_file() for path in written)


def test_markdown_compares_final_metrics_with_std(written: tuple[Path, Path]) -> None:
    # Execute
    markdown = written[0].read_text(encoding="utf-8")

    # Assert
    assert markdown.startswith("# fedavg-digits\n\nFedAvg vs FedProx vs local on scikit-learn digits\n")
    assert "| FedAvg | 93.0 | 0.250 | 1.00 | 3.2 |" in markdown
    assert "| Local | 60.0 ± 5.0 | 1.000 ± 0.100 | 0.00 | 0.5 |" in markdown
    assert "| FedAvg | 3 | 2 | 1 | 296.3 kB | 703.7 kB | 3.20 s |" in markdown
    assert '```json\n{\n  "data": {\n' in markdown


def test_markdown_links_figures_written_beside_it(written: tuple[Path, Path], out_dir: Path) -> None:
    # Execute
    links = re.findall(r"!\[[^\]]*\]\(([^)]*)\)", written[0].read_text(encoding="utf-8"))

    # Assert
    assert len(links) == 4
    assert all(link.startswith("plots/") for link in links)
    assert all((out_dir / link).read_bytes().startswith(PNG_SIGNATURE) for link in links)
    written_files = sorted(path.name for path in (out_dir / "plots").iterdir())
    assert written_files == sorted(Path(link).name for link in links)


def test_figures_of_an_earlier_report_are_removed_and_other_files_kept(results: dict[str, Any], tmp_path: Path) -> None:
    # Prepare
    (tmp_path / "plots").mkdir()
    (tmp_path / "plots" / "final_loss.png").write_bytes(PNG_SIGNATURE)
    (tmp_path / "plots" / "notes.txt").write_text("mine")

    # Execute
    write_report(results, tmp_path)

    # Assert
    assert not (tmp_path / "plots" / "final_loss.png").exists()
    assert (tmp_path / "plots" / "notes.txt").read_text() == "mine"


def test_html_embeds_every_figure_and_loads_nothing(written: tuple[Path, Path], out_dir: Path) -> None:
    # Prepare
    markdown, html_path = written
    links = re.findall(r"!\[[^\]]*\]\(([^)]*)\)", markdown.read_text(encoding="utf-8"))

    # Execute
    html = html_path.read_text(encoding="utf-8")

    # Assert
    sources = re.findall(r'src="([^"]*)"', html)
    prefix = "data:image/png;base64,"
    assert [base64.b64decode(source.removeprefix(prefix)) for source in sources] == [
        (out_dir / link).read_bytes() for link in links
    ]
    assert all(source.startswith(prefix) for source in sources)
    assert "http" not in html
    assert "<td>60.0 ± 5.0</td>" in html
    assert "<td>skipped: 2 replies &lt; min_replies 3</td>" in html
