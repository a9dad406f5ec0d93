"""Secure aggregation in whole runs: the same results as the plain runs, and no update in the clear."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from fedmosaic.errors import ConfigError
from fedmosaic.experiments import outputs
from fedmosaic.experiments.config import load_config
from fedmosaic.experiments.runner import MESSAGES, run_experiment
from fedmosaic.federation.audit import read_log
from fedmosaic.federation.secagg.protocol import PREFIX

DIGITS = {
    "name": "secure",
    "seed": 2,
    "data": {"dataset": "digits"},
    "partition": {"scheme": "dirichlet", "num_clients": 4, "alpha": 1.0, "min_size": 40},
    "federation": {"rounds": 2, "audit": True},
    "model": {"hidden": [8]},
    "train": {"batch_size": 64},
    "runs": [{"name": "FedAvg", "method": "fedavg"}],
}
ACCURACY_POINTS = 0.5
"""Largest difference of a final accuracy with and without secure aggregation, in percentage points."""


@pytest.fixture(autouse=True)
def _no_report(monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs without their report: its plots are not what is checked here and would be most of the time."""
    monkeypatch.setattr(outputs, "write_report", lambda results, out_dir: None)


def _secure(source: dict[str, Any], **aggregation: Any) -> dict[str, Any]:
    secured = copy.deepcopy(source)
    secured["aggregation"] = {"secure": True, **aggregation}
    return secured


def _run(source: dict[str, Any], out: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    results = run_experiment(load_config(source), out)
    (log,) = sorted((out / MESSAGES).glob("*.jsonl"))
    return results["runs"][0], read_log(log)


def test_a_secure_run_gives_the_plain_runs_metrics_and_uploads_only_masked_arrays(tmp_path: Path) -> None:
    # Prepare
    plain, _ = _run(DIGITS, tmp_path / "plain")

    # Execute
    secure, log = _run(_secure(DIGITS), tmp_path / "secure")

    # Assert
    accuracies = [(k, v) for k, v in plain["final"].items() if "accuracy" in k]
    assert accuracies
    for key, value in accuracies:
        assert abs(secure["final"][key] - value) * 100 <= ACCURACY_POINTS, key
    uploads = [entry for entry in log if entry["direction"] == "up"]
    assert uploads
    assert all(name.startswith(PREFIX) for entry in uploads for name in entry["arrays"])
    assert any(f"{PREFIX}masked" in entry["arrays"] for entry in uploads)


def test_clients_dropping_beyond_the_threshold_skip_the_round_with_a_one_line_reason(tmp_path: Path) -> None:
    # Prepare: 3 of the 4 clients fail in round 2; a round needs ceil(0.5 * 4) = 2.
    source = _secure(DIGITS, secure_threshold=0.5)
    source["federation"] = {**DIGITS["federation"], "failures": [{"round": 2, "clients": [0, 1, 2]}], "audit": False}
    source["federation"].pop("audit")

    # Execute
    results = run_experiment(load_config(source), tmp_path / "out")

    # Assert
    history = results["runs"][0]["history"]
    assert [row["status"] for row in history] == ["ok", "skipped"]
    assert history[1]["reason"] == "secure aggregation: 1 of 4 sampled clients sent keys, fewer than the threshold 2"


@pytest.mark.parametrize(
    ("extra", "field", "words"),
    [
        ({"aggregation": {"secure": True, "rule": "median"}}, "aggregation.rule", "'median' needs each one"),
        ({"aggregation": {"secure": True, "clip_norm": 1.0}}, "aggregation.clip_norm", "cannot bound each one"),
        ({"aggregation": {"secure": True}, "attack": {"fraction": 0.3, "kind": "sign-flip"}}, "attack.kind", "sign"),
        ({"aggregation": {"secure_range": 2.0}}, "aggregation.secure_range", "without aggregation.secure"),
    ],
)
def test_what_secure_aggregation_cannot_combine_with_is_refused_on_one_line(
    extra: dict[str, Any], field: str, words: str
) -> None:
    # Prepare
    source = {**DIGITS, **extra}

    # Execute
    with pytest.raises(ConfigError) as raised:
        load_config(source)

    # Assert
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(field)
    assert words.lower() in message.lower()
