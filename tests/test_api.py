"""``fedmosaic.run``: one call from Python, the same numbers and files as the command line."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import fedmosaic
from fedmosaic.cli import main
from fedmosaic.errors import ConfigError

README = Path(__file__).resolve().parents[1] / "README.md"
OVERRIDES = {"federation.rounds": 3, "partition.alpha": 0.3}


def test_run_returns_the_accuracies_the_command_line_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Prepare
    sets = [item for key, value in OVERRIDES.items() for item in ("--set", f"{key}={value}")]
    argv = ["fedmosaic", "run", "digits-fedavg", "--quiet", "--seed", "3", "--out", str(tmp_path / "cli"), *sets]
    monkeypatch.setattr(sys, "argv", argv)

    # Execute
    with pytest.raises(SystemExit) as exited:
        main()
    results = fedmosaic.run("digits-fedavg", out=tmp_path / "api", seed=3, overrides=OVERRIDES, progress=False)

    # Assert
    assert exited.value.code in (None, 0)
    cli = pd.DataFrame(json.loads((tmp_path / "cli" / "summary.json").read_text())["rows"])
    assert list(results.comparison["name"]) == list(cli["name"])
    assert list(results.comparison["accuracy"]) == list(cli["accuracy"])
    assert sorted(p.name for p in (tmp_path / "api").iterdir()) == sorted(p.name for p in (tmp_path / "cli").iterdir())


def test_history_has_a_row_per_round_and_the_metrics_as_columns(tmp_path: Path) -> None:
    # Execute
    results = fedmosaic.run("digits-fedavg", out=tmp_path, overrides={"federation.rounds": 2}, progress=False)
    history = results.history("FedAvg")

    # Assert
    assert list(history["round"]) == [1, 2]
    assert {"accuracy", "loss", "bytes_up", "status"} <= set(history.columns)
    assert history["accuracy"].iloc[-1] == results.comparison.set_index("name").loc["FedAvg", "accuracy"]
    assert results.model("FedAvg").predict(np.zeros((1, 1, 8, 8), np.float32)).probabilities.shape == (1, 10)
    with pytest.raises(ConfigError, match=r"no run named 'fedavg' \(runs: FedAvg, FedProx, Centralized, Local\)"):
        results.history("fedavg")


def test_a_config_built_in_python_runs_and_bad_overrides_name_their_key(tmp_path: Path) -> None:
    # Prepare
    source = {
        "name": "mine",
        "data": {"dataset": "digits"},
        "partition": {"num_clients": 3},
        "federation": {"rounds": 1},
        "runs": [{"name": "a", "method": "fedavg"}],
    }

    # Execute
    results = fedmosaic.run(source, out=tmp_path / "mine", progress=False)

    # Assert
    assert list(results.comparison["name"]) == ["a"]
    with pytest.raises(ConfigError, match=r"^partition\.alpah: unknown key; did you mean 'alpha'"):
        fedmosaic.run(source, out=tmp_path / "bad", overrides={"partition.alpah": 1}, progress=False)
    assert not (tmp_path / "bad").exists()


def test_the_readme_library_example_runs_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Prepare
    text = README.read_text()
    example = re.search(r"As a library.*?```python\n(.*?)```", text, re.S)
    assert example is not None
    monkeypatch.chdir(tmp_path)

    # Execute
    exec(compile(example.group(1), "README.md", "exec"), {})

    # Assert
    assert (tmp_path / "runs" / "lib" / "summary.json").is_file()
