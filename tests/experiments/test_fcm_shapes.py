"""The fcm-shapes preset: F-CMs against centralized, local and static on images of shapes, cut short."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from fedmosaic import load_model
from fedmosaic.cli import main
from fedmosaic.data.shapes import shape_splits
from fedmosaic.experiments.config import load_config
from fedmosaic.experiments.presets import preset_source
from fedmosaic.experiments.runner import run_experiment

SAMPLES = 2000
MARGIN = 0.15
"""How far above the majority class F-CMs must be after a short run (the ceiling is about 0.9)."""


def test_the_preset_cut_short_runs_every_setting_and_f_cms_beats_the_majority_class_by_15_points(
    tmp_path: Path,
) -> None:
    # Prepare: the preset as shipped, on 2,000 images, 4 clients (1 joining at round 2), 8 rounds
    source = preset_source("fcm-shapes")
    source["data"]["samples"] = SAMPLES
    source["concepts"] = {"num_clients": 4, "initial_clients": 3, "join_round": 2}
    source["federation"]["rounds"] = 8
    config = load_config(source)
    test = shape_splits(seed=config.seed, n_samples=SAMPLES).test
    test_task = test.columns(["accept"])[:, 0]
    majority = float(np.bincount(test_task).max() / len(test_task))

    # Execute
    results = run_experiment(config, tmp_path / "out")
    predicted = load_model(tmp_path / "out" / "model" / "00-f-cms").predict(test.x[:5])

    # Assert: every run of the preset ran on the CNN backbone; F-CMs well above the majority class,
    # every concept covered
    final = {run["name"]: run["final"] for run in results["runs"]}
    assert set(final) == {"F-CMs", "Centralized", "Local", "Static"}
    assert all(run["params"]["model"]["backbone"] == "cnn" for run in results["runs"])
    assert final["F-CMs"]["accuracy"] > majority + MARGIN, (final["F-CMs"]["accuracy"], majority)
    assert final["F-CMs"]["coverage"] == 1.0
    # its model file loads without trusting any code (the backbone is fedmosaic's) and reads images
    assert predicted.probabilities.shape == (5, 2)
    assert predicted.concepts["colour"].shape == (5, 3)


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        (
            "runs.0.params.model.input_shape=[3, 8, 8]",
            "error: runs.0.params.model.input_shape: [3, 8, 8] holds 192 values, the inputs have 768",
        ),
        ("data.network=alarm", "error: data.network: has no effect outside data.dataset = 'bnlearn'"),
    ],
)
def test_a_wrong_image_shape_or_a_key_of_another_dataset_is_one_line_exit_2_nothing_written(
    override: str,
    expected: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Prepare
    out = tmp_path / "out"
    arguments = ["run", "fcm-shapes", "--quiet", "--out", str(out), "--set", "data.samples=100", "--set", override]
    monkeypatch.setattr(sys, "argv", ["fedmosaic", *arguments])

    # Execute
    with pytest.raises(SystemExit) as exited:
        main()

    # Assert
    assert exited.value.code == 2
    assert capsys.readouterr().err.strip().startswith(expected)
    assert not out.exists()
