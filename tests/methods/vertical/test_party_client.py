"""Specification of a passive party's kept optimizer: reusing it between messages changes no number."""

from __future__ import annotations

import numpy as np
import pytest
from torch import nn

from fedmosaic.data.vertical_data import VerticalData
from fedmosaic.federation import ClientState, Federation, InProcessGrid, Schedule
from fedmosaic.federation.record import RoundRecord
from fedmosaic.methods.vertical.false_vfl.build import build_false_vfl
from fedmosaic.methods.vertical.false_vfl.client import FalseVFLClient
from fedmosaic.methods.vertical.fedhssl.build import build_fedhssl
from fedmosaic.methods.vertical.fedhssl.params import FedHSSLParams
from fedmosaic.methods.vertical.optimizer_state import OptimizerSpec
from fedmosaic.methods.vertical.party_client import PartyClient
from fedmosaic.methods.vertical.task import VerticalTask

from .test_replies import FALSE_VFL, SPLIT

ROUNDS = 3
BUILDS = {
    "false-vfl": (build_false_vfl, FALSE_VFL),
    # Pre-training, then fine-tuning, whose first message drops the pre-training optimizer from the state.
    "fedhssl": (build_fedhssl, FedHSSLParams(**SPLIT.model_dump(), pretrain_rounds=1)),
}


def _records(name: str, data: VerticalData, cache: int | None) -> list[RoundRecord]:
    build, params = BUILDS[name]
    server, factory = build(VerticalTask(data, ROUNDS), params)
    grid = InProcessGrid(factory, 0, cache=cache)
    return Federation(server, grid, Schedule(num_clients=data.num_parties - 1), seed=0, rounds=ROUNDS).run()


@pytest.mark.parametrize("name", BUILDS)
def test_a_party_kept_built_answers_as_one_rebuilt_from_its_state_every_message(
    tiny_data: VerticalData, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Prepare: parties handled one by one in both runs (stacked, they agree only up to float rounding)
    monkeypatch.setattr(FalseVFLClient, "batch_key", lambda self, message: None)

    # Execute: every party kept built (its optimizer reused), and one party built at a time, so each
    # message rebuilds its party and the optimizer from the arrays of its state.
    kept = _records(name, tiny_data, cache=None)
    rebuilt = _records(name, tiny_data, cache=1)

    # Assert: the same numbers, exactly
    assert [r.metrics for r in kept] == [r.metrics for r in rebuilt]


def _party(data: VerticalData) -> PartyClient:
    """A passive party (FALSE-VFL's; only what every party shares is used) with a linear network."""
    return FalseVFLClient(
        1, data.splits, lambda: nn.Linear(data.train.blocks[1].shape[1], 2), OptimizerSpec("adam", 0.1)
    )


def _step(party: PartyClient, state: ClientState) -> nn.Module:
    model, optimizer = party.load(state, seed=0)
    x, _ = party.features("train", np.arange(4))
    party.step(state, model, optimizer, model(x).square().sum())
    return model


def test_a_party_state_follows_its_live_model_and_moments_without_a_write_per_step(tiny_data: VerticalData) -> None:
    # Prepare: a party that has taken one step, and the arrays its state holds
    party, state = _party(tiny_data), ClientState()
    model = _step(party, state)
    held = dict(state.arrays)

    # Execute: two more steps
    _step(party, state)
    model = _step(party, state)

    # Assert: the state holds the very same arrays, and they hold the current model and moments
    assert state.arrays.keys() == held.keys()
    assert all(state.arrays[name] is array for name, array in held.items())
    np.testing.assert_array_equal(state.arrays["model.weight"], model.weight.detach().numpy())
    assert state.arrays["opt.0.step"] == 3


def test_a_party_given_another_state_leaves_the_arrays_of_the_first_as_they_were(tiny_data: VerticalData) -> None:
    # Prepare: a party that has stepped on one state, and a second state that travelled (copied arrays)
    party, first = _party(tiny_data), ClientState()
    _step(party, first)
    before = {name: array.copy() for name, array in first.arrays.items()}
    second = ClientState({name: array.copy() + 1 for name, array in first.arrays.items()})

    # Execute: the party loads the second state and steps on it
    model = _step(party, second)

    # Assert: the first state's arrays kept their values; the second holds the new step
    for name, array in before.items():
        np.testing.assert_array_equal(first.arrays[name], array)
    np.testing.assert_array_equal(second.arrays["model.weight"], model.weight.detach().numpy())
