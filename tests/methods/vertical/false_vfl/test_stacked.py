"""Specification of stacked parties: the same numbers as each party's own networks, and as parties handled one by one."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fedmosaic.data.missingness import Missingness
from fedmosaic.data.vertical_data import VerticalData, vertical_split
from fedmosaic.federation import ClientContext, ClientJob, ClientState, Federation, InProcessGrid, Message, Schedule
from fedmosaic.methods.vertical.false_vfl import client as false_vfl_client
from fedmosaic.methods.vertical.false_vfl.build import build_false_vfl
from fedmosaic.methods.vertical.false_vfl.client import FalseVFLClient
from fedmosaic.methods.vertical.false_vfl.stacked import StackedParties, pad_to
from fedmosaic.methods.vertical.networks import PartyModel
from fedmosaic.methods.vertical.task import VerticalTask

from ..test_replies import FALSE_VFL

WIDTHS = (2, 3, 1)


@pytest.mark.parametrize(
    ("likelihood", "mask_model"), [("gaussian", False), ("gaussian", True), ("bernoulli", False), ("bernoulli", True)]
)
def test_stacked_parties_of_different_widths_agree_with_each_party_in_values_and_gradients(
    likelihood: str, mask_model: bool
) -> None:
    # Prepare: three parties of different widths, rows some of them do not hold
    torch.manual_seed(0)
    models = [PartyModel(w, 8, 4, likelihood, mask_model) for w in WIDTHS]  # type: ignore[arg-type]
    blocks = [torch.rand(5, w) for w in WIDTHS]
    present = torch.rand(3, 5) < 0.6
    h = torch.randn(3, 2, 5, 4)

    # Execute: each party alone, then all stacked (features zero-padded to the widest block)
    alone = [
        (*m.encoder(x), m.log_likelihood(x, p, h_k)) for m, x, p, h_k in zip(models, blocks, present, h, strict=True)
    ]
    stacked = StackedParties(models)
    x = torch.stack([pad_to(block, (5, max(WIDTHS))) for block in blocks])
    mean, logvar = stacked.encode(x)
    loglik = stacked.log_likelihood(x, present, h)
    own = sum(m.sum() + lv.sum() + ll.sum() for m, lv, ll in alone)
    own_gradients = torch.autograd.grad(own, [p for m in models for p in m.parameters()])
    together_gradients = torch.autograd.grad(
        mean.sum() + logvar.sum() + loglik.sum(), [p for m in models for p in m.parameters()]
    )

    # Assert: the same posteriors, log-likelihoods and parameter gradients
    for k, (m, lv, ll) in enumerate(alone):
        torch.testing.assert_close(mean[k], m, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(logvar[k], lv, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(loglik[k], ll, atol=1e-5, rtol=1e-5)
    for a, b in zip(own_gradients, together_gradients, strict=True):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)


def _data() -> VerticalData:
    """A party of width 2 (active), then passive parties of widths 1, 3 and 2."""
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, size=60)
    x = (rng.normal(size=(60, 8)) + y[:, None]).astype(np.float32)
    columns = [np.arange(0, 2), np.arange(2, 3), np.arange(3, 6), np.arange(6, 8)]
    train = vertical_split(x[:40], y[:40], columns, Missingness("mcar", 0.4), rng, 16)
    test = vertical_split(x[40:], y[40:], columns, Missingness("mcar", 0.3), rng)
    return VerticalData(train, {"MCAR 3": test}, 2, "gaussian", None)


def _run(data: VerticalData) -> tuple[list[dict[str, float]], dict[int, dict[str, np.ndarray]]]:
    server, factory = build_false_vfl(VerticalTask(data, 3), FALSE_VFL)
    grid = InProcessGrid(factory, 0)
    records = Federation(server, grid, Schedule(num_clients=data.num_parties - 1), seed=0, rounds=3).run()
    return [r.metrics for r in records], {c: s.arrays for c, s in grid.client_states().items()}


def test_parties_handled_together_give_the_records_and_states_of_parties_handled_one_by_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Prepare: passive parties of different widths
    data = _data()

    # Execute: stage 1 and stage 2 with the parties stacked, then one after another
    together = _run(data)
    monkeypatch.setattr(FalseVFLClient, "batch_key", lambda self, message: None)
    one_by_one = _run(data)

    # Assert: every metric and every array of every party's state agree within float rounding
    for a, b in zip(together[0], one_by_one[0], strict=True):
        assert a.keys() == b.keys()
        np.testing.assert_allclose([a[k] for k in sorted(a)], [b[k] for k in sorted(b)], rtol=1e-5, atol=1e-5)
    assert together[1].keys() == one_by_one[1].keys()
    for client, arrays in together[1].items():
        assert arrays.keys() == one_by_one[1][client].keys()
        for name, value in arrays.items():
            np.testing.assert_allclose(value, one_by_one[1][client][name], rtol=1e-4, atol=1e-5, err_msg=name)


def test_stacked_parties_update_from_the_graph_kept_since_the_steps_exchanges_as_from_a_new_forward_pass(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Prepare: count the updates that compute their forward pass again
    data = _data()
    recomputed = []
    again = false_vfl_client._recomputed_surrogate
    monkeypatch.setattr(
        false_vfl_client, "_recomputed_surrogate", lambda parties: recomputed.append(1) or again(parties)
    )

    # Execute: a run keeping each step's graph, then one where no graph is kept
    kept = _run(data)
    updates_kept = len(recomputed)
    monkeypatch.setattr(false_vfl_client._Step, "begin", classmethod(lambda cls, parties, held: None))
    forward_again = _run(data)

    # Assert: no update needed a second forward pass, every update of the second run did, and both agree
    assert updates_kept == 0
    assert len(recomputed) > 0
    for client, arrays in kept[1].items():
        for name, value in arrays.items():
            np.testing.assert_allclose(value, forward_again[1][client][name], rtol=1e-5, atol=1e-6, err_msg=name)
    for a, b in zip(kept[0], forward_again[0], strict=True):
        assert a == pytest.approx(b, rel=1e-5, abs=1e-6)


@pytest.mark.parametrize(("budget", "one_by_one"), [(60, []), (59, [0, 1, 2])])
def test_a_log_likelihood_exchange_over_the_stacking_budget_is_handled_one_party_at_a_time(
    monkeypatch: pytest.MonkeyPatch, budget: int, one_by_one: list[int]
) -> None:
    # Prepare: three parties asked for 4 samples of 5 rows each (60 latent rows stacked)
    _, factory = build_false_vfl(VerticalTask(_data(), 3), FALSE_VFL)
    h = np.random.default_rng(0).normal(size=(4, 5, FALSE_VFL.latent)).astype(np.float32)
    message = Message(
        arrays={"rows": np.arange(5), "h": h}, config={"action": "loglik", "split": "train", "jacobian": False}
    )
    jobs = [ClientJob(factory(c), message, ClientState(), ClientContext(c, 1, c)) for c in range(3)]
    monkeypatch.setattr(false_vfl_client, "STACKED_ROWS", budget)
    handled: list[int] = []
    monkeypatch.setattr(FalseVFLClient, "handle", lambda self, m, s, context: handled.append(context.client_id))

    # Execute
    FalseVFLClient.handle_many(jobs)

    # Assert: within the budget stacked, past it each party's own handle
    assert handled == one_by_one
