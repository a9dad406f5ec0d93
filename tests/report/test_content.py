"""Specification of :func:`fedmosaic.report.content.build_document`."""

import copy
import json
from typing import Any

import pytest

from fedmosaic.report.content import build_document, references
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


def test_sections_come_in_reading_order_the_answer_first(document: Document) -> None:
    assert [block.text for block in document.blocks if isinstance(block, Heading)] == [
        "Answer",
        "Per round",
        "Other metrics per round",
        "Communication per round",
        "All final metrics",
        "Communication and time",
        "Last 3 rounds of each run",
        "Configuration",
    ]


def test_the_answer_is_one_table_of_headline_metrics_in_percent_with_std(document: Document) -> None:
    assert _after(document, "Answer") == Table(
        header=("Run", "Task accuracy (%)", "Loss", "Sent (MB)", "Time (s)"),
        rows=(
            ("FedAvg", "93.0", "0.250", "1.00", "3.2"),
            ("FedProx", "91.0", "0.300", "1.07", "3.5"),
            ("Local", "60.0 ± 5.0", "1.000 ± 0.100", "0.00", "0.5"),
        ),
    )


def test_all_final_metrics_are_one_row_per_metric_one_column_per_run(document: Document) -> None:
    assert _after(document, "All final metrics") == Table(
        header=("Metric", "FedAvg", "FedProx", "Local"),
        rows=(
            ("Task accuracy (%)", "93.0", "91.0", "60.0 ± 5.0"),
            ("Loss", "0.250", "0.300", "1.000 ± 0.100"),
            ("Concept accuracy (%)", "—", "75.0", "—"),
        ),
    )


def test_totals_give_rounds_trained_and_skipped_bytes_and_time_per_run(document: Document) -> None:
    assert _after(document, "Communication and time") == Table(
        header=("Run", "Rounds", "Trained", "Skipped", "Bytes up", "Bytes down", "Wall time"),
        rows=(
            ("FedAvg", "3", "2", "1", "296.3 kB", "703.7 kB", "3.20 s"),
            ("FedProx", "3", "3", "0", "370.4 kB", "703.7 kB", "3.46 s"),
            ("Local", "3", "3", "0", "0 B", "0 B", "0.50 s"),
        ),
    )


def test_last_rounds_show_why_a_round_was_skipped(document: Document) -> None:
    # Execute
    table = _after(document, "Last 3 rounds of each run")

    # Assert
    assert isinstance(table, Table)
    assert table.header == ("Run", "Round", "Status", "Replies", "Dropped", "Up", "Down", "Time")
    assert len(table.rows) == 9
    assert table.rows[0] == ("FedAvg", "1", "ok", "4/5", "3", "123.5 kB", "234.6 kB", "0.12 s")
    assert table.rows[1] == (
        *("FedAvg", "2", "skipped: 2 replies < min_replies 3", "2/5", "1, 4, 2"),
        *("49.4 kB", "234.6 kB", "0.12 s"),
    )


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


def test_figures_are_the_headline_then_accuracy_then_the_other_metrics_in_one_figure(document: Document) -> None:
    # Execute
    images = document.images

    # Assert: concept_accuracy, reported by FedProx at its last round only, is in no figure
    assert [image.path for image in images] == [
        "plots/final_accuracy.png",
        "plots/curve_accuracy.png",
        "plots/other_metrics.png",
        "plots/bytes_per_round.png",
    ]
    assert "Loss" in images[2].caption
    assert "Concept" not in images[2].caption
    assert all(image.png.startswith(PNG_SIGNATURE) for image in images)
    assert len({image.png for image in images}) == len(images)


def test_a_metric_reported_only_at_the_end_has_no_curve(results: dict[str, Any]) -> None:
    # Prepare
    single = copy.deepcopy(results)
    single["runs"] = single["runs"][1:2]
    for run in single["runs"]:
        for entry in run["history"]:
            entry["metrics"].pop("loss", None)

    # Execute
    document = build_document(single)

    # Assert
    assert Heading("Other metrics per round") not in document.blocks
    assert [image.path for image in document.images] == [
        "plots/final_accuracy.png",
        "plots/curve_accuracy.png",
        "plots/bytes_per_round.png",
    ]


def test_a_centralized_run_and_a_pretrained_start_are_reference_lines(results: dict[str, Any]) -> None:
    # Prepare
    referenced = copy.deepcopy(results)
    referenced["runs"][1]["setting"] = "centralized"
    referenced["runs"][0]["final"]["pretrained_accuracy"] = 0.5

    # Execute
    found = references(referenced, "accuracy")

    # Assert
    assert found == {"pre-trained start": 0.5, "FedProx (final)": 0.91}
    assert references(referenced, "loss") == {"FedProx (final)": 0.3}


def test_colour_reliance_gets_its_own_curve_when_reported(results: dict[str, Any]) -> None:
    # Prepare
    simpson = copy.deepcopy(results)
    for run in simpson["runs"]:
        run["final"]["colour_reliance"] = 0.2
        for entry in run["history"]:
            entry["metrics"]["colour_reliance"] = 0.3

    # Execute
    document = build_document(simpson)

    # Assert
    assert "plots/curve_colour_reliance.png" in [image.path for image in document.images]
    assert _after(document, "Answer").header[2] == "Colour reliance (points)"  # type: ignore[union-attr]


def test_vertical_runs_show_accuracy_by_the_parties_present(results: dict[str, Any]) -> None:
    # Prepare
    vertical = copy.deepcopy(results)
    vertical["config"]["runs"] = [{"name": run["name"], "method": "false-vfl"} for run in vertical["runs"]]
    for run in vertical["runs"]:
        run["final"].update(accuracy_keep1=0.5, accuracy_keep2=0.7)

    # Execute
    document = build_document(vertical)

    # Assert
    assert _after(document, "Accuracy by parties present") == document.images[2]
    assert document.images[2].path == "plots/by_parties.png"


def test_a_concept_report_shows_the_graph_who_labels_what_and_the_interventions(
    concept_results: dict[str, Any],
) -> None:
    # Execute
    document = build_document(concept_results)

    # Assert
    headings = [block.text for block in document.blocks if isinstance(block, Heading)]
    assert headings[:4] == ["Answer", "Fused concept graph", "Who labels what", "Interventions"]
    assert _after(document, "Fused concept graph") == Paragraph(
        "The graph F-CMs learned, against the true network's edges between the same concepts: "
        "3 correct, 1 reversed, 1 extra, 1 missing."
    )
    assert _after(document, "Answer").header[1:4] == (  # type: ignore[union-attr]
        "Task accuracy (%)",
        "Concept accuracy (%)",
        "Concept coverage (%)",
    )
    assert [image.path for image in document.images][:4] == [
        "plots/final_accuracy.png",
        "plots/fused_graph.png",
        "plots/client_concepts.png",
        "plots/interventions.png",
    ]


def test_a_concept_report_without_a_known_network_says_so(concept_results: dict[str, Any]) -> None:
    # Prepare
    own_table = {**concept_results, "config": {**concept_results["config"], "data": {"dataset": "table"}}}

    # Execute
    document = build_document(own_table)

    # Assert
    assert _after(document, "Fused concept graph") == Paragraph(
        "The graph F-CMs learned (5 edges); the true network is not known."
    )


def test_a_concept_report_compares_with_the_true_edges_its_run_recorded(concept_results: dict[str, Any]) -> None:
    # Prepare: the run recorded the truth, and the configuration names no network to read it from
    recorded = copy.deepcopy(concept_results)
    recorded["config"] = {**recorded["config"], "data": {"dataset": "table"}}
    (graph_run,) = [run for run in recorded["runs"] if "graph" in (run.get("artifacts") or {})]
    truth = [["smoke", "lung"], ["lung", "either"], ["either", "dysp"], ["bronc", "dysp"], ["smoke", "bronc"]]
    graph_run["artifacts"]["true_edges"] = truth

    # Execute
    document = build_document(recorded)

    # Assert
    assert _after(document, "Fused concept graph") == Paragraph(
        "The graph F-CMs learned, against the true network's edges between the same concepts: "
        "3 correct, 1 reversed, 1 extra, 1 missing."
    )


def test_file_names_of_figures_are_safe_whatever_the_metric_name(results: dict[str, Any]) -> None:
    # Prepare
    renamed = copy.deepcopy(results)
    run = renamed["runs"][0]
    run["final"] = {"top-1 acc/val": 0.9}

    # Execute
    paths = [image.path for image in build_document(renamed).images]

    # Assert
    assert "plots/final_top-1_acc_val.png" not in paths
    assert all(" " not in path and "/" not in path.removeprefix("plots/") for path in paths)


def test_the_configuration_is_given_in_full_as_json(document: Document, results: dict[str, Any]) -> None:
    # Execute
    code = _after(document, "Configuration")

    # Assert
    assert isinstance(code, Code)
    assert code.language == "json"
    assert json.loads(code.text) == results["config"]


def test_a_private_run_says_what_its_epsilon_covers_and_what_leaves_without_noise(results: dict[str, Any]) -> None:
    # Prepare: the first run spent epsilon on client-level DP, as an F-CMs run
    private = copy.deepcopy(results)
    private["runs"][0]["method"] = "fcm"
    private["runs"][0]["history"][-1]["metrics"]["dp_epsilon"] = 4.0

    # Execute
    notes = [
        b.text for b in build_document(private).blocks if isinstance(b, Paragraph) and b.text.startswith("Privacy")
    ]

    # Assert: one note, for that run only; none in a report without privacy
    assert len(notes) == 1
    assert notes[0].startswith("Privacy. FedAvg: its epsilon covers client-level differential privacy")
    assert "confidence matrix" in notes[0]
    assert not any(isinstance(b, Paragraph) and b.text.startswith("Privacy") for b in build_document(results).blocks)


def test_a_run_whose_validation_loss_swung_period_2_is_named_in_the_report(results: dict[str, Any]) -> None:
    # Prepare: the first run alternated for 12 rounds
    swinging = copy.deepcopy(results)
    swinging["runs"][0]["final"]["alternating_rounds"] = 12.0

    # Execute
    notes = [
        b.text for b in build_document(swinging).blocks if isinstance(b, Paragraph) and b.text.startswith("Oscillation")
    ]

    # Assert: one note, for that run only; none in a report without the swing
    assert len(notes) == 1
    assert notes[0].startswith("Oscillation. FedAvg: its validation task loss went high and low by turns for 12 rounds")
    assert not any(
        isinstance(b, Paragraph) and b.text.startswith("Oscillation") for b in build_document(results).blocks
    )
