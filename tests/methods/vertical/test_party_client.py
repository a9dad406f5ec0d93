"""Specification of a passive party's kept optimizer: reusing it between messages changes no number."""

from __future__ import annotations

import pytest

from fedmosaic.data.vertical_data import VerticalData
from fedmosaic.federation import Federation, InProcessGrid, Schedule
from fedmosaic.federation.record import RoundRecord
from fedmosaic.methods.vertical.false_vfl.build import build_false_vfl
from fedmosaic.methods.vertical.false_vfl.client import FalseVFLClient
from fedmosaic.methods.vertical.fedhssl.build import build_fedhssl
from fedmosaic.methods.vertical.fedhssl.params import FedHSSLParams
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
