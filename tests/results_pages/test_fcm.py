"""The F-CMs results and studies pages show exactly the tables ``scripts/fcm_tables.py`` prints from the committed grids."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "results" / "fcm.md"
STUDIES = ROOT / "docs" / "results" / "fcm"
METHODS_PAGE = ROOT / "docs" / "methods" / "fcm-noise.md"


@pytest.fixture(scope="module")
def tables(repository_script: Callable[[str], ModuleType]) -> ModuleType:
    return repository_script("scripts/fcm_tables.py")


def test_every_table_of_the_report_is_printed_from_its_grid_files(tables: ModuleType) -> None:
    # Prepare
    page = PAGE.read_text(encoding="utf-8")
    runs = tables.load_runs()

    # Execute
    printed = [
        tables.verdict_table(runs),
        tables.table(runs, tables._task_cell),
        tables.table(runs, tables._concept_cell),
        tables.paper_side_by_side_table(runs),
    ]

    # Assert
    missing = [text.splitlines()[0] for text in printed if text not in page]
    assert not missing, f"stale tables (regenerate with python scripts/fcm_tables.py): {missing}"


def test_every_table_of_the_studies_is_printed_on_its_page_from_its_files(tables: ModuleType) -> None:
    # Prepare
    runs, afresh = tables.load_runs(), tables.load_runs(patterns=tables.AFRESH_TABLE_FILES)

    # Execute
    printed = {
        "interventions.md": [tables.table(runs, tables._gain_cell), tables.table(runs, tables._ceiling_cell)],
        "concept-quality.md": [
            tables.concept_gap_table(runs),
            tables.selection_table(afresh),
            tables.late_concepts_table(),
            tables.after_growth_table(),
        ],
        "training-regime.md": [
            tables.regime_table(),
            tables.hailfinder_regime_table(),
            tables.kept_regime_table(afresh, runs),
        ],
        "reference-inputs.md": [tables.reference_table(), tables.options_table()],
        "client-scaling.md": [tables.scaling_table()],
        "growth.md": [tables.growth_cost_table()],
    }

    # Assert
    missing = [
        f"{name}: {text.splitlines()[0]}"
        for name, texts in printed.items()
        for text in texts
        if text not in (STUDIES / name).read_text(encoding="utf-8")
    ]
    assert not missing, f"stale tables (regenerate with python scripts/fcm_tables.py): {missing}"


def test_the_insurance_cgm_cell_shows_the_main_tables_runs_on_both_pages(tables: ModuleType) -> None:
    # Prepare: the main table's per-seed task accuracy of the cell, as the regime table prints it
    runs = tables.load_runs()
    per_seed = {
        name: " / ".join(f"{100 * run['accuracy']:.1f}" for run in runs[("insurance", name, "cgm")])
        for name in ("Centralized", "F-CMs")
    }

    # Execute
    regime = tables.regime_table()

    # Assert: the kept rows of the regime study are the main table's runs, not another grid's
    kept = [line for line in regime.splitlines() if "main table" in line]
    assert [line.split(" | ")[2] for line in kept] == [per_seed["Centralized"], per_seed["F-CMs"]]


def test_the_task_verdict_is_one_sided_and_counts_the_seed_cells_under_the_margin(tables: ModuleType) -> None:
    # Prepare: one cell where F-CMs is 3 points above centralized, one 1 point under with one seed 3 under
    def cell(*accuracies: float) -> list[dict[str, float]]:
        return [{"accuracy": a, "balanced_concept_accuracy": 0.5, "coverage": 1.0} for a in accuracies]

    runs = {
        ("asia", "Centralized", "cbm"): cell(0.70, 0.70),
        ("asia", "F-CMs", "cbm"): cell(0.73, 0.73),
        ("sachs", "Centralized", "cbm"): cell(0.70, 0.70),
        ("sachs", "F-CMs", "cbm"): cell(0.71, 0.67),
    }

    # Execute
    row = tables.verdict_table(runs).splitlines()[2]

    # Assert
    assert "F-CMs minus centralized -1.0 to +3.0; 2 of 2 cells close" in row
    assert "1 of 4 seed-cells more than 2 under" in row
    assert row.endswith("**reproduced** |")


def test_the_noise_share_equivalence_of_the_noise_share_page_is_printed_from_its_file(tables: ModuleType) -> None:
    # Execute
    printed = tables.equivalence_table()

    # Assert
    assert printed.startswith("| network |")
    assert printed in METHODS_PAGE.read_text(encoding="utf-8")


def test_the_concept_study_marks_a_concept_late_only_when_no_first_round_client_labels_it(
    repository_script: Callable[[str], ModuleType],
) -> None:
    # Prepare: a and b labeled from round 1, c only by a client joining in round 10
    extract = repository_script("scripts/fcm_selection_concepts.py")
    registry = {
        "0": {"concepts": ["a", "b", "y"], "joined": 1},
        "1": {"concepts": ["a", "c", "y"], "joined": 10},
    }
    per_concept = {name: {"accuracy": 0.9, "balanced_accuracy": 0.8} for name in ("a", "b", "c")}
    history = [{"metrics": {"balanced_concept_accuracy": value}} for value in (0.5, 0.6, 0.7)]
    run = {
        "name": "F-CMs",
        "final": {"best_round": 1.0, "balanced_concept_accuracy": 0.8},
        "artifacts": {"registry": registry, "per_concept": per_concept, "changes": [{"round": 10}]},
        "history": history,
    }
    values = {"data.network": "asia", "runs.*.params.model.family": "cbm", "seed": 0}

    # Execute
    record = extract.run_record(values, run)

    # Assert: the last round's evaluation (the tested model's) is not a trained-so-far point
    assert record["late_only"] == ["c"]
    assert record["client_share"] == {"a": 1.0, "b": 0.5, "c": 0.5}
    assert record["growth_rounds"] == [10]
    assert record["balanced_by_round"] == [0.5, 0.6]


def test_the_growth_cost_table_averages_each_cells_growths_and_marks_cells_without_one(
    repository_script: Callable[[str], ModuleType], tmp_path: Path, tables: ModuleType
) -> None:
    # Prepare: asia CBM grew once in each of two seeds; nothing else ran
    extract = repository_script("scripts/fcm_growth_cost.py")
    growths = [
        record
        for seed, (ours, paper) in enumerate([(0.3, 0.2), (0.5, 0.4)])
        for record in extract.growth_records(
            {"data.network": "asia", "runs.*.params.model.family": "cbm", "seed": seed},
            {"name": "F-CMs", "artifacts": {"changes": [{"round": 10, "ratio": ours, "growth_ratio": paper}]}},
        )
    ]
    (tmp_path / "fcm-growth-cost.json").write_text(json.dumps({"config": "", "growths": growths}), encoding="utf-8")

    # Execute
    rows = {line.split(" | ")[0]: line for line in tables.growth_cost_table(tmp_path).splitlines()}

    # Assert: means of the two growths, in percent, beside the paper's 62.55
    assert (
        rows["| asia"] == "| asia | 0, 1 | 40.0 / 30.0 / 62.55 | not run / 61.30 | not run / 32.19 | not run / 28.56 |"
    )
    assert rows["| sachs"].startswith("| sachs | - | not run / 70.00 |")


def test_the_study_pages_state_the_counts_their_json_gives(tables: ModuleType) -> None:
    # Prepare: the pages' prose with its line breaks folded
    def prose(name: str) -> str:
        return " ".join((STUDIES / name).read_text(encoding="utf-8").split())

    runs = tables.load_runs()
    concept, _ = tables._differences(runs, "balanced_concept_accuracy")

    # Execute
    close = sum(d >= -tables.CONCEPT_MARGIN for d in concept)
    higher, cells = tables.growth_comparison()

    # Assert: the verdict and the reading of each page both give the count the files give
    assert prose("concept-quality.md").count(f"in {close} of the {len(concept)}") == 2
    assert prose("growth.md").count(f"in {higher} of the {cells} cells") == 2


def test_the_verdict_page_gives_the_verdicts_the_report_prints(tables: ModuleType) -> None:
    # Prepare: the verdict page's F-CMs rows, by claim, and the report's printed rows in the same order
    verdicts = (ROOT / "docs" / "results" / "README.md").read_text(encoding="utf-8").splitlines()
    claims = (
        "| F-CMs matches the centralized model's task accuracy |",
        "| F-CMs covers every concept",
        "| federated concept accuracy close to centralized |",
    )

    # Execute
    printed = tables.verdict_table(tables.load_runs()).splitlines()[2:]

    # Assert
    for claim, row in zip(claims, printed, strict=True):
        verdict = row.rstrip(" |").rpartition("| ")[2]
        assert any(line.startswith(claim) and f"| {verdict} |" in line for line in verdicts), (claim, verdict)
