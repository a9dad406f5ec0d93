"""docs/add-a-method.md against the code: its capabilities table and its ServerLogic list cannot go stale."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

from fedmosaic.methods.base import Capabilities
from fedmosaic.methods.registry import METHODS

METHOD_GUIDE = Path(__file__).resolve().parents[1] / "docs" / "add-a-method.md"


def documented_capabilities(text: str) -> tuple[list[str], dict[str, set[str]]]:
    """The table's flag columns, and each method's flags marked ``yes``."""
    lines = [line.strip() for line in text.splitlines()]
    start = next(i for i, line in enumerate(lines) if line.startswith("| method |"))
    header = _cells(lines[start])[1:]
    flags: dict[str, set[str]] = {}
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cells = _cells(line)
        marked = {flag for flag, cell in zip(header, cells[1:], strict=True) if cell == "yes"}
        flags |= dict.fromkeys(cells[0].split(", "), marked)
    return header, flags


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip("|").split("|")]


def test_the_table_has_a_column_per_capability_and_a_row_per_built_in_method() -> None:
    # Execute
    header, flags = documented_capabilities(METHOD_GUIDE.read_text())

    # Assert
    assert header == [f.name for f in fields(Capabilities)]
    built_in = {name for name in METHODS if METHODS.package(name) == "fedmosaic"}
    assert set(flags) == built_in


def test_each_method_s_row_marks_exactly_the_flags_it_declares() -> None:
    # Execute
    _, flags = documented_capabilities(METHOD_GUIDE.read_text())

    # Assert
    declared = {name: set(METHODS[name].supports.names()) for name in flags}
    assert flags == declared


def test_the_server_bullet_names_every_public_method_of_server_logic() -> None:
    # Prepare
    from fedmosaic.federation import ServerLogic

    text = METHOD_GUIDE.read_text()
    bullet = text[text.index("**Server** (`server.py`)") : text.index("**Client** (`client.py`)")]

    # Execute
    public = {name for name in vars(ServerLogic) if not name.startswith("_")}
    missing = {name for name in public if f"`{name}`" not in bullet}

    # Assert
    assert public >= {"initialize", "run_round", "state_dict", "exported_model"}
    assert not missing, f"docs/add-a-method.md's server bullet lacks {sorted(missing)}"
