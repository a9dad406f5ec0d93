"""Process-wide random generators: captured in checkpoints, restored on resume."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import torch

from fedmosaic.federation import ClientState
from fedmosaic.federation.checkpoint import Checkpoint, load_checkpoint, save_checkpoint
from fedmosaic.federation.rng import capture_rng_states, restore_rng_states


def _draws() -> tuple[float, float, float, float]:
    return random.random(), random.gauss(0, 1), float(np.random.normal())  # noqa: NPY002 - the legacy global generator is what is saved, float(torch.rand(1))


def test_states_round_trip_through_a_checkpoint_and_give_the_same_draws(tmp_path: Path) -> None:
    # Prepare: generators in some arbitrary state, with cached Gaussians.
    random.seed(5)
    random.gauss(0, 1)
    np.random.seed(7)  # noqa: NPY002 - the legacy global generator is what is saved
    np.random.normal()  # noqa: NPY002
    torch.manual_seed(9)
    path = tmp_path / "c.npz"
    save_checkpoint(Checkpoint(fingerprint="f", server=ClientState(), rng=capture_rng_states()), path)
    expected = _draws()

    # Execute: the generators move on, then the checkpoint is restored.
    _draws()
    random.seed(1)
    restore_rng_states(load_checkpoint(path).rng)

    # Assert
    assert _draws() == expected


def test_a_federation_restores_the_generators_of_its_last_checkpoint(make_toy, tmp_path: Path) -> None:
    # Prepare: a run of 2 rounds, then global draws made by something else.
    make_toy(rounds=2, checkpoint=tmp_path / "c.npz").federation.run()
    after_run = _draws()
    _draws()

    # Execute: resume (nothing left to run) restores the states saved after round 2.
    make_toy(rounds=2, checkpoint=tmp_path / "c.npz").federation.run(resume=True)

    # Assert
    assert _draws() == after_run
