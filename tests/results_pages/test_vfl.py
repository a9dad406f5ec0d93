"""The FALSE-VFL results page prints its tables from the committed grid files."""

import json
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest


@pytest.fixture(scope="module")
def tables(repository_script: Callable[[str], ModuleType]) -> ModuleType:
    return repository_script("scripts/vfl_tables.py")


def test_every_page_shows_the_blocks_of_its_committed_json(tables: ModuleType) -> None:
    # Execute
    generated = tables.blocks()

    # Assert: each block on each of its pages (the verdicts on the report and the verdict page alike)
    stale = [
        f"{page}: {name}"
        for name, pages in tables.PAGES.items()
        for page in pages
        if tables.page_block((tables.RESULTS / page).read_text(encoding="utf-8"), name) != generated[name]
    ]
    assert not stale, f"stale blocks (run: python scripts/vfl_tables.py --write): {stale}"


def test_the_verdicts_judge_each_claim_apart(tables: ModuleType, tmp_path: Path) -> None:
    # Prepare: ours wins every cell by a margin that grows from MCAR 0 to MCAR 5 and falls under MAR 2
    runs = [{"name": "FALSE-VFL (paper)"}, {"name": "Local"}]
    for test, (mine, local) in {"mcar0": (0.50, 0.49), "mcar5": (0.60, 0.50), "mar2": (0.60, 0.55)}.items():
        runs[0][f"accuracy_{test}"], runs[1][f"accuracy_{test}"] = mine, local
    config = {"data": {"dataset": "fashion-mnist"}, "vertical": {"protocol": "paper", "train_missing": "mcar:0.5"}}
    (tmp_path / "vfl-part-test.json").write_text(
        json.dumps({"config": config, "points": [{"values": {}, "runs": runs}]})
    )

    # Execute
    row = tables.verdict_table(tables.load_runs(tmp_path)).splitlines()[2]

    # Assert: every cell won; lead +5.3 within 2 of the paper's +4.5; growth only halfway
    assert "3 of 3 (100%): **reproduced**" in row
    assert "+5.3: **reproduced**" in row
    assert "+1.0 → +10.0 → +5.0: **partly**" in row


def test_the_tally_counts_a_cell_won_only_when_the_contender_beats_every_baseline(
    tables: ModuleType, tmp_path: Path
) -> None:
    # Prepare: one tuned point, two test settings; ours wins MCAR 0 and loses MCAR 5 to PlugVFL
    runs = [
        {"name": "FALSE-VFL (fedmosaic)", "accuracy_mcar0": 0.8, "accuracy_mcar5": 0.5},
        {"name": "FALSE-VFL (paper)", "accuracy_mcar0": 0.9, "accuracy_mcar5": 0.9},
        {"name": "Local", "accuracy_mcar0": 0.4, "accuracy_mcar5": 0.3},
        {"name": "PlugVFL", "accuracy_mcar0": 0.7, "accuracy_mcar5": 0.6},
    ]
    config = {"data": {"dataset": "isolet"}, "vertical": {"protocol": "tuned", "train_missing": "mcar:0.5"}}
    (tmp_path / "vfl-part-test.json").write_text(
        json.dumps({"config": config, "points": [{"values": {}, "runs": runs}]})
    )

    # Execute
    loaded = tables.load_runs(tmp_path)
    cells = tables.margins(loaded, "isolet", "tuned", ["mcar0", "mcar5"])

    # Assert: the paper's FALSE-VFL is no baseline of the tuned protocol
    assert [(test, round(margin, 6)) for _, test, margin in cells] == [("mcar0", 10.0), ("mcar5", -10.0)]
    assert "best in **1 of 2** cells" in tables.tally(loaded, "isolet", "tuned")
    assert "Best in most cells: partly" in tables.tally(loaded, "isolet", "tuned")
    assert "The verdict is on the seeds run: 0 of the 1 training settings run have all 3 seeds, the others 1." in (
        tables.tally(loaded, "isolet", "tuned")
    )


def test_the_paper_protocol_is_tallied_without_and_with_the_reference_configuration(
    tables: ModuleType, tmp_path: Path
) -> None:
    # Prepare: FALSE-VFL (paper) beats the paper-protocol baselines, not LASER-VFL (reference configuration)
    runs = [
        {"name": "FALSE-VFL (paper)", "accuracy_mcar0": 0.8},
        {"name": "LASER-VFL", "accuracy_mcar0": 0.6},
        {"name": "LASER-VFL (reference configuration)", "accuracy_mcar0": 0.85},
    ]
    config = {"data": {"dataset": "isolet"}, "vertical": {"protocol": "paper", "train_missing": "mcar:0.5"}}
    (tmp_path / "vfl-part-test.json").write_text(
        json.dumps({"config": config, "points": [{"values": {}, "runs": runs}]})
    )

    # Execute
    text = tables.tally(tables.load_runs(tmp_path), "isolet", "paper")

    # Assert
    without, with_reference = text.split("**With LASER-VFL (reference configuration) among the baselines:**")
    assert "best in **1 of 1**" in without
    assert "+20.0" in without
    assert "best in **0 of 1**" in with_reference


def test_runs_with_labels_among_all_rows_are_tallied_apart_from_the_default_placement(
    tables: ModuleType, tmp_path: Path
) -> None:
    # Prepare: the same tuned point with labels among the active party's rows, and among all rows
    config = {"data": {"dataset": "isolet"}, "vertical": {"protocol": "tuned", "train_missing": "mcar:0.5"}}
    for labels, accuracy in (("active", 0.8), ("all", 0.6)):
        runs = [{"name": "FALSE-VFL (fedmosaic)", "accuracy_mcar0": accuracy}, {"name": "Local", "accuracy_mcar0": 0.7}]
        points = [{"values": {"vertical.label_rows": labels}, "runs": runs}]
        (tmp_path / f"vfl-part-{labels}.json").write_text(json.dumps({"config": config, "points": points}))

    # Execute
    default, among_all = tables.load_runs(tmp_path), tables.load_runs(tmp_path, labels="all")

    # Assert: one seed each, never mixed
    assert tables.margins(default, "isolet", "tuned", ["mcar0"])[0][2] == pytest.approx(10.0)
    assert tables.margins(among_all, "isolet", "tuned", ["mcar0"])[0][2] == pytest.approx(-10.0)


def test_variant_runs_are_listed_apart_and_never_tallied(tables: ModuleType, tmp_path: Path) -> None:
    # Prepare: a variant grid repeating the chosen run beside a candidate, and no part
    runs = [
        {"name": "FALSE-VFL (fedmosaic)", "validation_accuracy": 0.9, "accuracy_mcar0": 0.8},
        {"name": "FALSE-VFL (fedmosaic, party subsets)", "validation_accuracy": 0.91, "accuracy_mcar0": 0.7},
    ]
    config = {"seed": 0, "data": {"dataset": "isolet"}, "vertical": {"train_missing": "mcar:0.5"}}
    (tmp_path / "vfl-variants-test.json").write_text(
        json.dumps({"config": config, "points": [{"values": {"seed": 1}, "runs": runs}]})
    )

    # Execute
    variants = tables.load_variants(tmp_path)
    table = tables.variants_table(variants)

    # Assert: one row per run, with its point's seed and validation accuracy; the parts see none of it
    assert table.splitlines()[2].startswith("| ISOLET | MCAR 5 | 1 | FALSE-VFL (fedmosaic) | 90 | 80.0 |")
    assert table.splitlines()[3].startswith(
        "| ISOLET | MCAR 5 | 1 | FALSE-VFL (fedmosaic, party subsets) | 91 | 70.0 |"
    )
    assert tables.load_runs(tmp_path) == {}


def test_the_points_table_lists_the_seeds_run_and_counts_the_points_missing(tables: ModuleType, tmp_path: Path) -> None:
    # Prepare: a Fashion-MNIST tuned point trained under MCAR 5 on seeds 0 and 2, nothing else
    config = {"data": {"dataset": "fashion-mnist"}, "vertical": {"protocol": "tuned", "train_missing": "mcar:0.5"}}
    for seed in (0, 2):
        points = [{"values": {"seed": seed}, "runs": [{"name": "Local", "accuracy_mcar0": 0.7}]}]
        (tmp_path / f"vfl-part-s{seed}.json").write_text(json.dumps({"config": config, "points": points}))

    # Execute
    text = tables.coverage(tmp_path)

    # Assert: one (dataset, protocol) row of six training settings, two of its 18 points run
    assert "**2 of 18** points run" in text
    assert "**16 not run**" in text
    assert "| Fashion-MNIST | tuned | — | 0, 2 | — | — | — | — |" in text


def test_the_label_shift_row_compares_the_labeled_rows_class_shares_with_the_test_rows(
    repository_script: Callable[[str], ModuleType],
) -> None:
    # Prepare: two parties; of four training rows three are labeled, all class 0; the test rows are half class 1
    shift = repository_script("scripts/vfl_label_shift.py")
    from fedmosaic.data.vertical_data import VerticalData, VerticalSplit

    block = np.zeros((4, 1), np.float32)
    present = np.array([[True, True], [True, False], [True, False], [False, True]])
    train = VerticalSplit([block, block], present, np.array([0, 0, 0, -1]))
    test = VerticalSplit([block, block], np.ones((4, 2), bool), np.array([0, 0, 1, 1]))
    data = VerticalData(train, {"MCAR 0": test}, num_classes=2, likelihood="gaussian")

    # Execute
    row = shift.shift_row("mnar:0.7", data)

    # Assert: TV = 0.5, class 1 absent, 1.33 parties per labeled row, 1.25 per row, one in three fully aligned
    assert row == "| mnar:0.7 | 3 | 0.500 | 0.0 (class 1) | 100.0 (class 0) | 1.33 | 1.25 | 33 |"
