"""Every reply of a passive party is checked before the active party uses it; a bad one is dropped, not fatal."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import numpy as np
import pytest
import torch

from fedmosaic.data.vertical_data import VerticalData
from fedmosaic.federation import Federation, InProcessGrid, Message, Schedule
from fedmosaic.federation.record import RoundRecord
from fedmosaic.methods.vertical.false_vfl.build import build_false_vfl
from fedmosaic.methods.vertical.false_vfl.params import FalseVFLParams
from fedmosaic.methods.vertical.fedhssl.build import build_fedhssl
from fedmosaic.methods.vertical.fedhssl.params import FedHSSLParams
from fedmosaic.methods.vertical.split.build import build_laser, build_plug, build_vanilla
from fedmosaic.methods.vertical.split.params import LaserVFLParams, PlugVFLParams, SplitVFLParams
from fedmosaic.methods.vertical.task import VerticalTask

FALSE_VFL = FalseVFLParams(
    latent=4, top_latent=2, hidden=8, batch_size=16, kappa=3, predict_samples=5, stage1_rounds=2, classifier_passes=2
)
SPLIT = SplitVFLParams(hidden=8, embedding=4, batch_size=8)
Corruption = Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]]


class CorruptingGrid(InProcessGrid):
    """Client 0's replies holding ``target`` are replaced by ``corrupt`` of their arrays."""

    def __init__(self, factory, target: str, corrupt: Corruption) -> None:  # type: ignore[no-untyped-def]
        super().__init__(factory, 0)
        self.target, self.corrupt = target, corrupt

    def send_and_receive(
        self, messages: Mapping[int, Message], rnd: int, failing: frozenset[int] = frozenset()
    ) -> dict[int, Message]:
        replies = super().send_and_receive(messages, rnd, failing)
        reply = replies.get(0)
        if reply is not None and self.target in reply.arrays:
            replies[0] = Message(arrays=self.corrupt(dict(reply.arrays)), kind=reply.kind)
        return replies


def _with(name: str, change: Callable[[np.ndarray], np.ndarray]) -> Corruption:
    return lambda arrays: {**arrays, name: change(np.array(arrays[name]))}


def _nan(array: np.ndarray) -> np.ndarray:
    array.flat[0] = np.nan
    return array


def _run(build, params, data: VerticalData, grid_for) -> list[RoundRecord]:  # type: ignore[no-untyped-def]
    server, factory = build(VerticalTask(data, 4), params)
    records: list[RoundRecord] = []
    Federation(server, grid_for(factory), Schedule(num_clients=data.num_parties - 1), seed=0, rounds=4).run(
        on_round=records.append
    )
    return records


def _metrics_are_finite(records: list[RoundRecord]) -> bool:
    return all(math.isfinite(v) for r in records for v in r.metrics.values())


BUILDS = {
    "false-vfl-I": (build_false_vfl, FALSE_VFL),
    "false-vfl-II": (build_false_vfl, FALSE_VFL.model_copy(update={"variant": "II"})),
    "vanilla": (build_vanilla, SPLIT),
    "plug": (build_plug, PlugVFLParams(**SPLIT.model_dump())),
    "laser": (build_laser, LaserVFLParams(**SPLIT.model_dump())),
    "fedhssl": (build_fedhssl, FedHSSLParams(**SPLIT.model_dump(), pretrain_rounds=2)),
}


@pytest.mark.parametrize("name", BUILDS)
def test_every_honest_reply_fits_its_declared_spec(tiny_data: VerticalData, name: str) -> None:
    build, params = BUILDS[name]
    records = _run(build, params, tiny_data, lambda factory: InProcessGrid(factory, 0))
    assert [r.rejected for r in records] == [{}] * 4
    assert all(r.status == "ok" for r in records)


FALSE_VFL_ATTACKS = {
    "NaN mean": ("mean", _with("mean", _nan), "array 'mean' has non-finite values"),
    "a row too few": ("mean", _with("mean", lambda a: a[1:]), "array 'mean': shape"),
    "unknown name": ("mean", lambda arrays: {**arrays, "x": np.zeros(3, np.float32)}, "unexpected array 'x'"),
    "variance named as such": (
        "logvar",
        lambda arrays: {"mean": arrays["mean"], "var": np.exp(arrays.pop("logvar"))},
        "unexpected array 'var'",
    ),
    "zero variance": (
        "logvar",
        _with("logvar", lambda a: np.full_like(a, -200.0)),
        "logvar: variance exp(-200) is not a positive finite float32",
    ),
    "infinite variance": (
        "logvar",
        _with("logvar", lambda a: np.full_like(a, 1e4)),
        "is not a positive finite float32",
    ),
    "float64 log-likelihoods": (
        "loglik",
        _with("loglik", lambda a: a.astype(np.float64)),
        "array 'loglik': dtype float64",
    ),
    "log-likelihoods of a row too few": ("loglik", _with("loglik", lambda a: a[:, 1:]), "array 'loglik': shape"),
    "Inf log-likelihood": (
        "loglik",
        _with("loglik", lambda a: np.full_like(a, np.inf)),
        "array 'loglik' has non-finite values",
    ),
    "jacobian missing": ("dloglik_dh", lambda arrays: {"loglik": arrays["loglik"]}, "missing arrays ['dloglik_dh']"),
}


@pytest.mark.parametrize("variant", ["I", "II"])
@pytest.mark.parametrize("attack", FALSE_VFL_ATTACKS)
def test_false_vfl_drops_a_malformed_reply_with_its_reason_and_fuses_the_parties_heard(
    tiny_data: VerticalData, attack: str, variant: str
) -> None:
    # Prepare: every such reply of client 0, in both stages and at prediction, is malformed
    target, corrupt, reason = FALSE_VFL_ATTACKS[attack]
    params = FALSE_VFL.model_copy(update={"variant": variant})

    # Execute
    records = _run(build_false_vfl, params, tiny_data, lambda factory: CorruptingGrid(factory, target, corrupt))

    # Assert: rejected with its reason (from round 1 on; the jacobian is asked for in stage 1 only),
    # never a crash, finite bounds and accuracies
    assert reason in records[0].rejected["0"]
    assert all(set(r.rejected) <= {"0"} and reason in r.rejected.get("0", reason) for r in records)
    assert all(r.status == "ok" for r in records)
    assert _metrics_are_finite(records)
    assert 0.0 <= records[-1].metrics["accuracy"] <= 1.0


SPLIT_ATTACKS = {
    "NaN embedding": (_with("embedding", _nan), "array 'embedding' has non-finite values"),
    "a row too many": (_with("embedding", lambda a: np.concatenate([a, a[:1]])), "array 'embedding': shape"),
    "unknown name": (lambda arrays: {**arrays, "rows": np.arange(3)}, "unexpected array 'rows'"),
}


@pytest.mark.parametrize("name", ["vanilla", "plug", "laser"])
@pytest.mark.parametrize("attack", SPLIT_ATTACKS)
def test_split_baselines_drop_a_malformed_embedding_and_treat_the_block_as_absent(
    tiny_data: VerticalData, attack: str, name: str
) -> None:
    build, params = BUILDS[name]
    corrupt, reason = SPLIT_ATTACKS[attack]

    records = _run(build, params, tiny_data, lambda factory: CorruptingGrid(factory, "embedding", corrupt))

    assert all(reason in r.rejected["0"] for r in records)
    assert _metrics_are_finite(records)
    assert 0.0 <= records[-1].metrics["accuracy"] <= 1.0


FEDHSSL_ATTACKS = {
    "NaN prediction": ("prediction", _with("prediction", _nan), "array 'prediction' has non-finite values"),
    "projections of a row too few": ("projection", _with("projection", lambda a: a[1:]), "array 'projection': shape"),
    "NaN top layer": (
        "encoder.2.weight",
        _with("encoder.2.weight", _nan),
        "array 'encoder.2.weight' has non-finite values",
    ),
    "input layer uploaded": (
        "encoder.2.weight",
        lambda arrays: {**arrays, "encoder.0.weight": np.zeros((8, 2), np.float32)},
        "unexpected array 'encoder.0.weight'",
    ),
}


@pytest.mark.parametrize("attack", FEDHSSL_ATTACKS)
def test_fedhssl_drops_a_malformed_pretraining_reply_and_averages_the_parties_heard(
    tiny_data: VerticalData, attack: str
) -> None:
    build, params = BUILDS["fedhssl"]
    target, corrupt, reason = FEDHSSL_ATTACKS[attack]

    records = _run(build, params, tiny_data, lambda factory: CorruptingGrid(factory, target, corrupt))

    assert all(reason in r.rejected["0"] for r in records[:2])
    assert all(r.status == "ok" for r in records)
    assert _metrics_are_finite(records)
    assert 0.0 <= records[-1].metrics["accuracy"] <= 1.0


def test_a_row_whose_only_posterior_was_dropped_gets_the_standard_normal(tiny_data: VerticalData) -> None:
    # Prepare: rows held by party 1 alone; party 1 (client 0) unheard
    server, _ = build_false_vfl(VerticalTask(tiny_data, 4), FALSE_VFL)
    split = tiny_data.train
    rows = np.flatnonzero(split.present[:, 1] & ~split.present[:, 0] & ~split.present[:, 2])
    assert len(rows) > 0
    present = torch.from_numpy(split.present[rows])
    party_2 = (torch.ones(int(present[:, 2].sum()), 4), torch.ones(int(present[:, 2].sum()), 4))

    # Execute
    with torch.no_grad():
        local = server._local_posteriors(split, rows, present, {1: party_2})
        mean, logvar = server._fuse(local, local.heard)

    # Assert
    assert torch.equal(mean, torch.zeros(len(rows), 4))
    assert torch.equal(logvar, torch.zeros(len(rows), 4))
