"""docs/reference/cli.md is the command-line reference the commands' own definitions give."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

import click
import pytest


@pytest.fixture(scope="module")
def reference(repository_script: Callable[[str], ModuleType]) -> ModuleType:
    return repository_script("scripts/cli_reference.py")


def test_the_page_is_what_the_commands_give(reference: ModuleType) -> None:
    # Execute
    page = reference.PAGE.read_text(encoding="utf-8")

    # Assert
    assert page == reference.render(), "docs/reference/cli.md is stale; run: python scripts/cli_reference.py --write"


def test_a_command_section_gives_its_usage_and_a_row_per_parameter(reference: ModuleType) -> None:
    # Prepare: a command with an argument, a flag and an option with a default
    command = click.Command(
        "greet",
        help="Say hello.",
        params=[
            click.Argument(["name"]),
            click.Option(["--loud"], is_flag=True, help="Shout | loudly."),
            click.Option(["--times"], type=int, default=2, help="How often."),
        ],
    )

    # Execute
    lines = reference.command_section("greet", command).splitlines()

    # Assert
    assert lines[0] == "## `fedmosaic greet`"
    assert "fedmosaic greet [OPTIONS] NAME" in lines
    assert lines[-3:] == [
        "| `NAME` | text |  |  |",
        "| `--loud` |  |  | Shout \\| loudly. |",
        "| `--times` | integer | `2` | How often. |",
    ]
