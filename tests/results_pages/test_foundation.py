"""The foundation results page shows the figures of its committed JSON files."""

import json
import statistics
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[2] / "docs" / "results"
PAGE = RESULTS / "foundation.md"


def test_the_fedavg_table_is_the_one_of_its_json() -> None:
    # Prepare
    document = json.loads((RESULTS / "fedavg_vs_centralized.json").read_text())
    accuracy = document["accuracy"]

    # Execute
    table = "\n".join(
        [
            f"| FedAvg, {document['rounds']} rounds | {100 * accuracy['FedAvg']:.2f}% |",
            f"| centralized, {document['rounds']} epochs | {100 * accuracy['Centralized']:.2f}% |",
            f"| FedAvg / centralized | **{document['fedavg_over_centralized']:.3f}** (target: at least 0.95) |",
        ]
    )

    # Assert
    assert table in PAGE.read_text()


def test_the_engine_overhead_table_is_the_one_of_its_json() -> None:
    # Prepare
    document = json.loads((RESULTS / "engine_overhead.json").read_text())

    # Execute
    table = "\n".join(
        [
            f"| in-process engine | {statistics.median(document['engine_seconds']):.2f} s |",
            f"| bare PyTorch loop | {statistics.median(document['bare_seconds']):.2f} s |",
            f"| ratio | **{document['engine_over_bare_median']:.2f}** (target: at most 1.10) |",
        ]
    )

    # Assert
    page = PAGE.read_text()
    assert table in page
    assert f"last digit ({document['final_accuracy']['engine']})" in page
    assert document["final_accuracy"]["engine"] == document["final_accuracy"]["bare"]
