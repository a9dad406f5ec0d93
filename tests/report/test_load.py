"""Specification of :func:`fedmosaic.report.load_results`."""

import json
from pathlib import Path
from typing import Any

import pytest

from fedmosaic.errors import FedmosaicError
from fedmosaic.report import load_results


def test_reads_the_results_a_run_wrote(tmp_path: Path, results: dict[str, Any]) -> None:
    # Prepare
    (tmp_path / "results.json").write_text(json.dumps(results), encoding="utf-8")

    # Execute
    loaded = load_results(tmp_path)

    # Assert
    assert loaded == results


def test_a_folder_without_results_is_a_one_line_error_naming_it(tmp_path: Path) -> None:
    # Prepare
    run_dir = tmp_path / "never-ran"

    # Execute
    with pytest.raises(FedmosaicError) as raised:
        load_results(run_dir)

    # Assert
    message = str(raised.value)
    assert message.startswith(f"no results.json in {run_dir}: ")
    assert "\n" not in message


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ('{"experiment": "fedavg-digits",', "Expecting property name"),
        ('["not", "an", "object"]', "expected a JSON object, got list"),
    ],
    ids=["truncated", "not-an-object"],
)
def test_malformed_results_are_a_one_line_error_naming_the_file(tmp_path: Path, content: str, reason: str) -> None:
    # Prepare
    path = tmp_path / "results.json"
    path.write_text(content, encoding="utf-8")

    # Execute
    with pytest.raises(FedmosaicError) as raised:
        load_results(tmp_path)

    # Assert
    message = str(raised.value)
    assert message.startswith(f"malformed {path}: ")
    assert reason in message
    assert "\n" not in message
