"""The FedCFA results page prints its tables from the committed JSON (``scripts/fedcfa_tables.py``)."""

import json
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "results" / "fedcfa.md"
STUDIES = ROOT / "docs" / "results" / "fedcfa"


@pytest.fixture(scope="module")
def script(repository_script: Callable[[str], ModuleType]) -> ModuleType:
    return repository_script("scripts/fedcfa_tables.py")


def test_every_table_is_on_the_report_or_a_study_page_as_the_script_prints_it(script: ModuleType) -> None:
    # Prepare
    pages = [PAGE.read_text(encoding="utf-8"), *(p.read_text(encoding="utf-8") for p in sorted(STUDIES.glob("*.md")))]
    # Execute
    tables = script.tables()
    # Assert
    missing = [t.splitlines()[0] for t in tables if not any(t in page for page in pages)]
    assert not missing, "stale tables; run: python scripts/fedcfa_tables.py"


def test_the_60_client_verdict_and_table_read_the_same_on_the_report_and_the_control_page(script: ModuleType) -> None:
    # Prepare
    horizon = script.clients60_partitions(pattern=script.HORIZON)
    control_page = (STUDIES / "decoder-step-control.md").read_text(encoding="utf-8")
    # Execute
    verdict, table = script.step_control_table(horizon), script.horizon_table(horizon)
    # Assert
    assert verdict in PAGE.read_text(encoding="utf-8")
    assert verdict in control_page
    assert table in PAGE.read_text(encoding="utf-8")
    assert table in control_page


def test_the_page_names_the_variant_the_validation_rule_chooses(script: ModuleType) -> None:
    # Execute
    chosen = script.recommended(script.load_runs())
    # Assert
    assert f"**{chosen}** (chosen)" in PAGE.read_text(encoding="utf-8")


def test_a_collected_grid_records_its_experiment_and_the_command_given(script: ModuleType, tmp_path: Path) -> None:
    # Prepare: one finished point of a 60-client grid
    point = tmp_path / "points" / "000-mnist"
    point.mkdir(parents=True)
    history = [{"round": 1, "metrics": {"accuracy": 0.912345678, "loss": 0.3}}]
    run = {"name": "FedAvg", "method": "fedavg", "params": {}, "history": history}
    result = {"seed": 0, "config": {"data": {"dataset": "mnist"}}, "runs": [run]}
    (point / "results.json").write_text(json.dumps(result), encoding="utf-8")

    # Execute
    plain = script.collect(tmp_path, "fedcfa-table")
    given = script.collect(tmp_path, "fedcfa-table", "fedmosaic run fedcfa-table --set federation.rounds=20")

    # Assert: only the kept metrics, rounded
    assert plain["experiment"] == "fedcfa-table"
    assert plain["command"] == "fedmosaic run fedcfa-table --data-dir DATA"
    assert given["command"] == "fedmosaic run fedcfa-table --set federation.rounds=20"
    assert plain["points"][0]["runs"][0]["history"] == [{"round": 1, "accuracy": 0.91235}]


def test_the_60_client_files_are_shown_by_partition_then_seed(script: ModuleType, tmp_path: Path) -> None:
    # Prepare
    for name in ("iid-seed0", "dir02-seed1", "dir06-seed10", "dir02-seed0", "dir06-seed2", "dir06-seed0"):
        (tmp_path / f"fedcfa-table-{name}.json").write_text("[]", encoding="utf-8")
    # Execute
    partitions = script.clients60_partitions(tmp_path)
    # Assert
    shown = {name: [path.stem.rpartition("-seed")[2] for path in paths] for name, paths in partitions.items()}
    assert list(shown.items()) == [("dir06", ["0", "2", "10"]), ("dir02", ["0", "1"]), ("iid", ["0"])]


def test_a_60_client_table_averages_the_seeds_and_shows_each_seeds_last_round(
    script: ModuleType, tmp_path: Path
) -> None:
    # Prepare: FedAvg on two seeds, FedCFA on seed 0 only, one dataset
    def grid(seed: int, runs: dict[str, float]) -> dict[str, object]:
        config = {"seed": seed, "data": {"dataset": "mnist"}, "partition": {"scheme": "iid"}}
        history = lambda accuracy: [{"round": r, "accuracy": accuracy} for r in range(1, 21)]  # noqa: E731
        return {
            "points": [
                {"seed": seed, "config": config, "runs": [{"name": n, "history": history(a)} for n, a in runs.items()]}
            ]
        }

    paths = []
    for seed, runs in ((0, {"FedAvg": 0.90, "FedCFA": 0.95}), (1, {"FedAvg": 0.80})):
        paths.append(tmp_path / f"fedcfa-table-iid-seed{seed}.json")
        paths[-1].write_text(json.dumps(grid(seed, runs)), encoding="utf-8")
    # Execute
    table = script.clients60_table(paths)
    # Assert
    rows = table.splitlines()[2:]
    assert rows == [
        "| FedAvg | 85.0 / 85.0 / 85.0 / 85.0 | 90.0 / 80.0 | - | - |",
        "| FedCFA | 95.0 / 95.0 / 95.0 / 95.0 | 95.0 / - | - | - |",
    ]
    assert script.clients60_setting("iid", paths) == "IID, seeds 0, 1"


def test_an_appended_grid_becomes_the_last_part_of_a_60_client_file(script: ModuleType, tmp_path: Path) -> None:
    # Prepare: a file holding one collected grid, and a grid run later on the same partition and seed
    path = tmp_path / "fedcfa-table-iid-seed1.json"
    first, later = {"command": "first", "points": []}, {"command": "later", "points": []}
    path.write_text(json.dumps(first), encoding="utf-8")
    # Execute
    parts = script.appended(path, later)
    fresh = script.appended(tmp_path / "fedcfa-table-iid-seed2.json", later)
    # Assert
    assert parts == [first, later]
    assert fresh == [later]


def test_the_50_round_table_shows_round_20_then_50_and_the_late_mean_and_bolds_each_columns_best(
    script: ModuleType, tmp_path: Path
) -> None:
    # Prepare: Dirichlet 0.2 on MNIST, seeds 0 and 1 (FedCFA on seed 0 only); IID on Fashion-MNIST, seed 0
    def grid(partition: str, dataset: str, seed: int, runs: dict[str, tuple[float, float]]) -> None:
        def history(at20: float, at50: float) -> list[dict[str, float]]:
            return [{"round": r, "accuracy": at20 if r <= 20 else at50} for r in range(1, 51)]

        config = {"seed": seed, "data": {"dataset": dataset}}
        point = {"config": config, "runs": [{"name": n, "history": history(*a)} for n, a in runs.items()]}
        (tmp_path / f"fedcfa-table50-{partition}-seed{seed}.json").write_text(json.dumps({"points": [point]}))

    grid("iid", "fashion-mnist", 0, {"FedAvg": (0.78, 0.85)})
    grid("dir02", "mnist", 0, {"FedAvg": (0.90, 0.96), "FedCFA": (0.95, 0.94)})
    grid("dir02", "mnist", 1, {"FedAvg": (0.80, 0.90)})
    # Execute
    table = script.horizon_table(script.clients60_partitions(tmp_path, script.HORIZON))
    # Assert
    assert table.splitlines() == [
        "| run | Dirichlet 0.2, MNIST, seeds 0, 1 | IID, Fashion-MNIST, seed 0 |",
        "|---|---|---|",
        "| FedAvg | 85.0 → 93.0 (93.0) | **78.0 → 85.0** (85.0) |",
        "| FedCFA | **95.0 → 94.0** (94.0) | - |",
    ]
    assert not script.clients60_partitions(tmp_path)  # the 20-round table reads none of them


def test_the_control_verdict_is_not_reproduced_when_the_control_leads_every_column(
    script: ModuleType, tmp_path: Path
) -> None:
    # Prepare: one IID MNIST cell, 50 rounds: FedCFA above FedAvg, the decoder-step control above both
    def history(accuracy: float) -> list[dict[str, float]]:
        return [{"round": r, "accuracy": accuracy} for r in range(1, 51)]

    runs = {"FedAvg": 0.90, "FedCFA": 0.92, "FedAvg, decoder step x11": 0.95}
    point = {
        "config": {"seed": 0, "data": {"dataset": "mnist"}},
        "runs": [{"name": n, "history": history(a)} for n, a in runs.items()],
    }
    (tmp_path / "fedcfa-table50-iid-seed0.json").write_text(json.dumps({"points": [point]}))
    # Execute
    rows = script.step_control_table(script.clients60_partitions(tmp_path, script.HORIZON)).splitlines()[2:]
    # Assert
    assert rows[0].startswith("| FedCFA above FedAvg | the paper's loss ahead in 1 of 1 ")
    assert rows[0].endswith("**reproduced** |")
    assert rows[1].endswith("first in 1 of 1 columns | **not reproduced** |")


def test_the_verdict_page_gives_the_60_client_verdict_the_report_prints(script: ModuleType) -> None:
    # Prepare
    verdicts = (ROOT / "docs" / "results" / "README.md").read_text(encoding="utf-8").splitlines()
    row = next(line for line in verdicts if line.startswith("| FedCFA beats the baselines on 60-client tables |"))

    # Execute
    printed = script.step_control_table(script.clients60_partitions(pattern=script.HORIZON)).splitlines()[3]

    # Assert: the control's verdict, the one that says where the gain comes from
    assert printed.rstrip(" |").rpartition("| ")[2] in row
