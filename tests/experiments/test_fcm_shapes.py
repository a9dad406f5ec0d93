"""The fcm-shapes preset: F-CMs against centralized, local and static on images of shapes, cut short."""

from __future__ import annotations

from pathlib import Path

import numpy as np

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
    test_task = shape_splits(seed=config.seed, n_samples=SAMPLES).test.columns(["accept"])[:, 0]
    majority = float(np.bincount(test_task).max() / len(test_task))

    # Execute
    results = run_experiment(config, tmp_path / "out")

    # Assert: every run of the preset ran on the CNN backbone; F-CMs well above the majority class
    final = {run["name"]: run["final"] for run in results["runs"]}
    assert set(final) == {"F-CMs", "Centralized", "Local", "Static"}
    assert all(run["params"]["model"]["backbone"] == "cnn" for run in results["runs"])
    assert final["F-CMs"]["accuracy"] > majority + MARGIN, (final["F-CMs"]["accuracy"], majority)
    assert final["F-CMs"]["coverage"] == 1.0
