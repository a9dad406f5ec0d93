"""Every page under docs/ reads as a statement of today: no history, short enough to read, verdicts first."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
PAGES = sorted(DOCS.rglob("*.md"))
GENERATED = {DOCS / "experiments.md"}
"""Pages written by a generator (the configuration reference), exempt from the length limit."""
REPORTS = [DOCS / "results" / name for name in ("fcm.md", "fedcfa.md", "vfl.md")]
STUDIES = sorted(page for paper in ("fcm", "fedcfa", "vfl") for page in (DOCS / "results" / paper).glob("*.md"))
HISTORY = ("earlier code", "git history", "the issue")
COMMIT = re.compile(r"\b(?:(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}|(?<=commit )[0-9a-f]{7,40})\b")
"""A commit hash: 7 to 40 hex digits with at least one letter and one digit, or any after the word commit."""


def _name(page: Path) -> str:
    return str(page.relative_to(DOCS))


def _verdict_within(page: Path, lines: int) -> bool:
    head = page.read_text(encoding="utf-8").splitlines()[:lines]
    return any(line.startswith("## Verdicts") for line in head) and any(line.startswith("|---") for line in head)


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_a_page_tells_no_history(page: Path) -> None:
    # Execute
    text = page.read_text(encoding="utf-8")

    # Assert
    found = [phrase for phrase in HISTORY if phrase in text.lower()]
    assert not found, f"{_name(page)} tells history: {found}"
    assert not COMMIT.findall(text), f"{_name(page)} names commits: {COMMIT.findall(text)}"


@pytest.mark.parametrize("page", [page for page in PAGES if page not in GENERATED], ids=_name)
def test_a_page_is_at_most_400_lines(page: Path) -> None:
    # Execute
    lines = len(page.read_text(encoding="utf-8").splitlines())

    # Assert
    assert lines <= 400, f"{_name(page)} has {lines} lines"


@pytest.mark.parametrize("page", REPORTS + STUDIES, ids=_name)
def test_a_report_or_study_is_at_most_300_lines(page: Path) -> None:
    # Execute
    lines = len(page.read_text(encoding="utf-8").splitlines())

    # Assert
    assert lines <= 300, f"{_name(page)} has {lines} lines"


@pytest.mark.parametrize("page", REPORTS, ids=_name)
def test_a_paper_report_opens_with_its_verdict_table(page: Path) -> None:
    # Assert
    assert _verdict_within(page, 40), f"{_name(page)} has no verdict table in its first 40 lines"


@pytest.mark.parametrize("page", STUDIES, ids=_name)
def test_a_study_states_its_verdict_first(page: Path) -> None:
    # Execute
    opening = page.read_text(encoding="utf-8").split("\n\n")[1]

    # Assert
    assert opening.startswith("**Verdict.**"), f"{_name(page)} does not open with its verdict"


def test_the_commit_pattern_finds_hashes_and_not_numbers() -> None:
    # Assert
    assert COMMIT.findall("the commit 4818de5, then 0134669e, commit 0134669") == ["4818de5", "0134669e", "0134669"]
    assert not COMMIT.findall("seed 4294967295, a decade, 1e-5, cafebabe")


def test_the_verdict_check_needs_a_heading_and_a_table(tmp_path: Path) -> None:
    # Prepare
    table_late = tmp_path / "late.md"
    table_late.write_text("# A\n\n## Verdicts\n\n" + "text\n" * 40 + "| a |\n|---|\n", encoding="utf-8")
    first = tmp_path / "first.md"
    first.write_text("# A\n\n## Verdicts\n\n| a |\n|---|\n", encoding="utf-8")

    # Assert
    assert not _verdict_within(table_late, 40)
    assert _verdict_within(first, 40)
