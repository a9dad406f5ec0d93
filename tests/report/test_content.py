"""Specification of :func:`fedmosaic.report.content.build_document`."""

import copy
import json
from typing import Any

import pytest

from fedmosaic.report.content import build_document
from fedmosaic.report.document import Block, Code, Document, Heading, Paragraph, Table

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def document(results: dict[str, Any]) -> Document:
    return build_document(results)


def _after(document: Document, heading: str) -> Block:
    """Return the block that follows ``heading``."""
    return document.blocks[document.blocks.index(Heading(heading)) + 1]


def test_the_report_is_titled_by_the_experiment_and_describes_it(document: Document) -> None:
    assert document.title == "fedavg-digits"
    assert document.blocks[:2] == (
        Paragraph("FedAvg vs FedProx vs local on scikit-learn digits"),
        Paragraph("Experiment fedavg-digits · seed 0 · 3 runs · fedmosaic 0.1.0"),
    )


def test_sections_come_in_reading_order(document: Document) -> None:
    assert [block.text for block in document.blocks if isinstance(block, Heading)] == [
        "Final metrics",
        "Communication and time",
        "Metrics per round",
        "Final comparison",
        "Communication per round",
        "Last 3 rounds of each run",
        "Configuration",
    ]


def test_final_metrics_compare_runs_with_std_where_reported(document: Document) -> None:
    assert _after(document, "Final metrics") == Table(
        header=("Run", "Setting", "Method", "accuracy", "loss", "concept_accuracy"),
        rows=(
            ("FedAvg", "federated", "fedavg", "0.930", "0.250", "—"),
            ("FedProx", "federated", "fedprox", "0.910", "0.300", "0.750"),
            ("Local", "local", "fedavg", "0.600 ± 0.050", "1.000 ± 0.100", "—"),
        ),
    )


def test_totals_give_rounds_bytes_and_time_per_run(document: Document) -> None:
    assert _after(document, "Communication and time") == Table(
        header=("Run", "Rounds", "Skipped", "Bytes up", "Bytes down", "Wall time"),
        rows=(
            ("FedAvg", "3", "1", "296.3 kB", "703.7 kB", "3.20 s"),
            ("FedProx", "3", "0", "370.4 kB", "703.7 kB", "3.46 s"),
            ("Local", "3", "0", "0 B", "0 B", "0.50 s"),
        ),
    )


def test_last_rounds_show_why_a_round_was_skipped(document: Document) -> None:
    # Execute
    table = _after(document, "Last 3 rounds of each run")

    # Assert
    assert isinstance(table, Table)
    assert table.header == (
        *("Run", "Round", "Status", "Replies", "Dropped", "Up", "Down", "Time"),
        *("accuracy", "loss", "concept_accuracy"),
    )
    assert len(table.rows) == 9
    assert table.rows[0] == (
        *("FedAvg", "1", "ok", "4/5", "3", "123.5 kB", "234.6 kB", "0.12 s"),
        *("0.510", "1.300", "—"),
    )
    assert table.rows[1] == (
        *("FedAvg", "2", "skipped: 2 replies < min_replies 3", "2/5", "1, 4, 2"),
        *("49.4 kB", "234.6 kB", "0.12 s"),
        *("—", "—", "—"),
    )
    assert table.rows[8][-3:] == ("0.600 ± 0.050", "1.000 ± 0.100", "—")


def test_last_rounds_are_the_last_of_a_long_run(results: dict[str, Any]) -> None:
    # Prepare
    single = copy.deepcopy(results)
    single["runs"] = single["runs"][:1]
    history = single["runs"][0]["history"]
    history.append({**history[-1], "round": 4})

    # Execute
    table = _after(build_document(single), "Last 3 rounds of each run")

    # Assert
    assert isinstance(table, Table)
    assert [row[1] for row in table.rows] == ["2", "3", "4"]


def test_figures_show_each_metric_per_round_its_comparison_and_the_traffic(document: Document) -> None:
    # Execute
    images = document.images

    # Assert: concept_accuracy, reported by FedProx at its last round only, gets neither a curve nor bars
    assert [(image.path, image.caption) for image in images] == [
        ("plots/curve_accuracy.png", "accuracy per round"),
        ("plots/curve_loss.png", "loss per round"),
        ("plots/final_accuracy.png", "final accuracy per run"),
        ("plots/final_loss.png", "final loss per run"),
        ("plots/bytes_per_round.png", "bytes sent per round"),
    ]
    assert all(image.png.startswith(PNG_SIGNATURE) for image in images)
    assert len({image.png for image in images}) == len(images)


def test_a_metric_reported_only_at_the_end_has_no_curve_and_a_single_run_no_comparison(
    results: dict[str, Any],
) -> None:
    # Prepare
    single = copy.deepcopy(results)
    single["runs"] = single["runs"][1:2]
    for entry in single["runs"][0]["history"]:
        entry["metrics"].pop("concept_accuracy", None)

    # Execute
    document = build_document(single)

    # Assert
    assert Heading("Final comparison") not in document.blocks
    assert [image.path for image in document.images] == [
        "plots/curve_accuracy.png",
        "plots/curve_loss.png",
        "plots/bytes_per_round.png",
    ]


def test_file_names_of_figures_are_safe_whatever_the_metric_name(results: dict[str, Any]) -> None:
    # Prepare
    renamed = copy.deepcopy(results)
    run = renamed["runs"][0]
    run["final"] = {"top-1 acc/val": 0.9}
    run["history"][0]["metrics"] = {"top-1 acc/val": 0.8}
    run["history"][1]["metrics"] = {"top-1 acc/val": 0.9}

    # Execute
    paths = [image.path for image in build_document(renamed).images]

    # Assert
    assert "plots/curve_top-1_acc_val.png" in paths


def test_the_configuration_is_given_in_full_as_json(document: Document, results: dict[str, Any]) -> None:
    # Execute
    code = _after(document, "Configuration")

    # Assert
    assert isinstance(code, Code)
    assert code.language == "json"
    assert json.loads(code.text) == results["config"]
