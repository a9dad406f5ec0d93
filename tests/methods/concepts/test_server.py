"""Specification of the F-CMs server.

Registration, graph fusion, growth, module-wise averaging, early stopping, best-model evaluation
and checkpoints.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np
import pytest
import torch

from fedmosaic.federation import (
    ClientContext,
    ClientLogic,
    ClientState,
    Federation,
    Grid,
    InProcessGrid,
    Message,
    RoundContext,
    Schedule,
)
from fedmosaic.methods.arrays import load_arrays, model_to_arrays
from fedmosaic.methods.concepts.client import REGISTER, TRAIN, FCMClient
from fedmosaic.methods.concepts.metrics import concept_scores
from fedmosaic.methods.concepts.models import ConceptModel, build_concept_model
from fedmosaic.methods.concepts.params import FCMParams
from fedmosaic.methods.concepts.server import FCMServer
from fedmosaic.methods.concepts.task import ConceptTask, decode_graph

FAMILIES = ("cbm", "cem", "cgm", "c2bm")
NODES = ("a", "b", "c", "y")


# --------------------------------------------------------------------------- engines for the tests


class RecordingGrid(Grid):
    """The in-process engine, recording every delivered message as (round, client, message)."""

    def __init__(self, factory: Callable[[int], ClientLogic], seed: int = 0) -> None:
        self.inner = InProcessGrid(factory, seed)
        self.sent: list[tuple[int, int, Message]] = []

    def send_and_receive(
        self, messages: Mapping[int, Message], rnd: int, failing: frozenset[int]
    ) -> dict[int, Message]:
        self.sent.extend((rnd, c, messages[c]) for c in sorted(messages))
        return self.inner.send_and_receive(messages, rnd, failing)

    def messages(self, rnd: int, kind: str) -> dict[int, Message]:
        return {c: m for r, c, m in self.sent if r == rnd and m.kind == kind}

    def client_states(self) -> dict[int, ClientState]:
        return self.inner.client_states()

    def load_client_states(self, states: Mapping[int, ClientState]) -> None:
        self.inner.load_client_states(states)


TrainReply = Callable[[int, int, Message], Message]


class ScriptedGrid(RecordingGrid):
    """Clients register for real; their training replies are crafted by ``train_reply(round, client, message)``."""

    def __init__(self, factory: Callable[[int], ClientLogic], train_reply: TrainReply) -> None:
        super().__init__(factory)
        self.train_reply = train_reply

    def send_and_receive(
        self, messages: Mapping[int, Message], rnd: int, failing: frozenset[int]
    ) -> dict[int, Message]:
        registering = {c: m for c, m in messages.items() if m.kind == REGISTER}
        replies = super().send_and_receive(registering, rnd, failing)
        for c in sorted(set(messages) - set(registering) - failing):
            self.sent.append((rnd, c, messages[c]))
            replies[c] = self.train_reply(rnd, c, messages[c])
        return replies


class Tampered(ClientLogic):
    """A client whose registration reply is altered by ``tamper`` (a misconfigured or lying client)."""

    def __init__(self, inner: ClientLogic, tamper: Callable[[Message], None]) -> None:
        self.inner = inner
        self.tamper = tamper

    def handle(self, message: Message, state: ClientState, context: ClientContext) -> Message:
        reply = self.inner.handle(message, state, context)
        if message.kind == REGISTER:
            reply = Message(
                arrays=dict(reply.arrays), config=dict(reply.config), metrics=dict(reply.metrics), kind=reply.kind
            )
            self.tamper(reply)
        return reply


def _factory(task: ConceptTask, params: FCMParams, tampered: Mapping[int, Callable[[Message], None]] | None = None):
    def make(k: int) -> ClientLogic:
        client = FCMClient(task.clients[k], params, task.train, task.cardinalities)
        return Tampered(client, tampered[k]) if tampered and k in tampered else client

    return make


def _round(server: FCMServer, grid: Grid, rnd: int, clients: list[int], seed: int = 0) -> dict[str, float]:
    return server.run_round(RoundContext(round=rnd, clients=sorted(clients), seed=seed, grid=grid))


def _prefixes(model: ConceptModel, nodes: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(model.node_prefix(n) for n in nodes)


def _union(messages: Mapping[int, Message]) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for message in messages.values():
        out.update(message.arrays)
    return out


# --------------------------------------------------------------------------- module-wise averaging

UPLOADS = {0: ("a", "y"), 1: ("b", "y"), 2: ("a",), 3: ()}
WEIGHTS = {0: 100.0, 1: 300.0, 2: 200.0, 3: 400.0}


@pytest.mark.parametrize("family", FAMILIES)
def test_each_module_is_averaged_over_its_uploaders_weighted_by_num_examples(
    make_task, make_params, family: str
) -> None:
    # Prepare: client k uploads the encoder and the modules UPLOADS[k], every value k + 1;
    # client 3 uploads nothing, and nobody uploads c.
    task = make_task()
    params = make_params(family)
    server = FCMServer(task, params)

    def reply(rnd: int, k: int, message: Message) -> Message:
        model = server.model
        assert model is not None
        keep = (model.ENCODER_PREFIX, *_prefixes(model, UPLOADS[k])) if UPLOADS[k] else ()
        arrays = {n: np.full_like(a, k + 1) for n, a in message.arrays.items() if keep and n.startswith(keep)}
        return Message(
            arrays=arrays, metrics={"num_examples": WEIGHTS[k], "val_loss": 1.0, "val_examples": 1.0, "train_loss": 1.0}
        )

    grid = ScriptedGrid(_factory(task, params), reply)

    # Execute
    _round(server, grid, 1, [0, 1, 2, 3])

    # Assert: by hand, sum of weight * value over the uploaders / sum of their weights.
    sent = _union(grid.messages(1, TRAIN))
    model = server.model
    assert model is not None
    expected = {
        model.ENCODER_PREFIX: (1 * 100 + 2 * 300 + 3 * 200) / 600,
        model.node_prefix("a"): (1 * 100 + 3 * 200) / 300,
        model.node_prefix("b"): 2.0,
        model.node_prefix("y"): (1 * 100 + 2 * 300) / 400,
    }
    state = model.state_dict()
    for name, tensor in state.items():
        value = tensor.numpy()
        if name.startswith(model.node_prefix("c")):
            np.testing.assert_array_equal(value, sent[name], err_msg=f"{name} was uploaded by nobody: keeps its value")
            continue
        (prefix,) = [p for p in expected if name.startswith(p)]
        np.testing.assert_allclose(value, np.full_like(value, expected[prefix]), rtol=1e-6, err_msg=name)


@pytest.mark.parametrize(
    ("family", "k", "needed"),
    [
        ("cbm", 2, ("a", "b")),  # concepts read only the encoding
        ("cbm", 0, NODES),  # a CBM task decoder reads every concept
        ("cgm", 1, NODES),  # b needs its ancestor a; y needs b and c
        ("cgm", 2, ("a", "b")),
        ("c2bm", 2, ("a", "b")),
    ],
)
def test_module_mode_sends_each_client_the_modules_its_labeled_nodes_depend_on(
    make_task, make_params, family: str, k: int, needed: tuple[str, ...]
) -> None:
    # Prepare
    task = make_task()
    params = make_params(family, aggregation="module")
    server = FCMServer(task, params)
    grid = RecordingGrid(_factory(task, params))

    # Execute
    _round(server, grid, 1, [0, 1, 2, 3])

    # Assert
    message = grid.messages(1, TRAIN)[k]
    model = server.model
    assert model is not None
    wanted = (model.ENCODER_PREFIX, *_prefixes(model, needed))
    assert set(message.arrays) == {n for n in model.state_dict() if n.startswith(wanted)}
    assert decode_graph(str(message.config["graph"])) == model.graph


def test_full_mode_sends_and_averages_the_whole_model(make_task, make_params) -> None:
    # Prepare
    task = make_task()
    params = make_params("cgm", aggregation="full")
    server = FCMServer(task, params)
    grid = RecordingGrid(_factory(task, params))

    # Execute
    _round(server, grid, 1, [0, 1, 2, 3])

    # Assert: every client got every tensor and uploaded every tensor (FedAvg).
    model = server.model
    assert model is not None
    names = set(model.state_dict())
    for message in grid.messages(1, TRAIN).values():
        assert set(message.arrays) == names


def test_module_mode_uploads_fewer_bytes_than_full_mode(make_task, make_params) -> None:
    # Prepare
    task = make_task()
    used: dict[str, int] = {}

    # Execute
    for aggregation in ("module", "full"):
        params = make_params("cbm", aggregation=aggregation)
        server = FCMServer(task, params)
        ctx = RoundContext(round=1, clients=[0, 1, 2, 3], seed=0, grid=InProcessGrid(_factory(task, params), 0))
        server.run_round(ctx)
        used[aggregation] = ctx.bytes_up

    # Assert
    assert used["module"] < used["full"]


# --------------------------------------------------------------------------- graph fusion


def test_graph_fusion_counts_every_client_seen_so_far_not_only_this_rounds(
    make_task, make_client_data, make_params
) -> None:
    # Prepare: client 0 (300 samples) believes a -> b; client 1 (100 samples) believes b -> a.
    clients = [
        make_client_data(("a", "b"), seed=0, n_train=300, edges=[("a", "b")]),
        make_client_data(("a", "b"), seed=1, n_train=100, edges=[("b", "a")]),
    ]
    task = make_task(clients=clients)
    params = make_params("cgm")
    server = FCMServer(task, params)
    grid = RecordingGrid(_factory(task, params))

    # Execute: client 0 takes part in round 1 only, client 1 in round 2 only.
    _round(server, grid, 1, [0])
    _round(server, grid, 2, [1])

    # Assert: client 0's heavier vote still decides in round 2.
    assert server.model is not None
    assert server.model.graph.parents["b"] == ("a",)
    assert server.model.graph.parents["a"] == ()
    # Control: client 1 alone would have turned the edge around.
    alone = FCMServer(make_task(clients=[clients[1]]), params)
    _round(alone, RecordingGrid(_factory(make_task(clients=[clients[1]]), params)), 1, [0])
    assert alone.model is not None
    assert alone.model.graph.parents["a"] == ("b",)


def test_clients_register_once_when_they_are_first_selected(make_task, make_params) -> None:
    # Prepare
    task = make_task()
    params = make_params()
    server = FCMServer(task, params)
    grid = RecordingGrid(_factory(task, params))

    # Execute
    _round(server, grid, 1, [0, 1])
    _round(server, grid, 2, [1, 2])

    # Assert
    assert set(grid.messages(1, REGISTER)) == {0, 1}
    assert set(grid.messages(2, REGISTER)) == {2}
    assert set(server.registry) == {0, 1, 2}
    assert server.registry[2]["num_examples"] == 200.0


# --------------------------------------------------------------------------- growth

GROWTH_SUBSETS = (("a", "b", "y"), ("a", "b"), ("a", "b", "c", "y"))  # client 2 brings c


def _grow_scenario(make_task, make_params, family: str, growth: str):  # type: ignore[no-untyped-def]
    """Round 1 with clients 0 and 1; client 2 (the only one with c) joins in round 2."""
    task = make_task(GROWTH_SUBSETS)
    params = make_params(family, growth=growth)
    server = FCMServer(task, params)
    grid = RecordingGrid(_factory(task, params))
    first = _round(server, grid, 1, [0, 1])
    assert server.model is not None
    before = model_to_arrays(server.model)
    with torch.no_grad():
        old_logits = server.model.eval()(torch.from_numpy(task.test.x))
    old_graph = server.model.graph
    second = _round(server, grid, 2, [0, 1, 2])
    return task, server, grid, first, second, before, old_logits, old_graph


@pytest.mark.parametrize("family", FAMILIES)
def test_a_newcomer_with_a_new_concept_grows_the_model_and_keeps_every_unaffected_parameter(
    make_task, make_params, family: str
) -> None:
    # Prepare / Execute
    task, server, grid, first, second, before, old_logits, old_graph = _grow_scenario(
        make_task, make_params, family, "grow"
    )

    # Assert: c got a module; the change is reported that round (and not before).
    assert "c" not in old_graph.nodes
    grown = grid.messages(2, TRAIN)[2].arrays  # client 2 labels everything: it receives the whole grown model
    model = server.model
    assert model is not None
    assert "c" in model.graph.nodes
    assert any(n.startswith(model.node_prefix("c")) for n in grown)
    assert "param_change_ratio" not in first
    assert second["param_change_ratio"] > 0
    assert second["param_change_ratio"] == pytest.approx(server.changes[-1]["ratio"])
    assert server.changes[-1]["round"] == 2
    assert "c" in server.changes[-1]["added"]
    # Every old tensor keeps its name; those not reshaped are bit-identical (the encoder among them).
    assert set(before) <= set(grown)
    kept = [n for n in before if grown[n].shape == before[n].shape]
    assert any(n.startswith(model.ENCODER_PREFIX) for n in kept)
    for name in kept:
        np.testing.assert_array_equal(grown[name], before[name], err_msg=name)
    # New connections start at zero: the old nodes' outputs are unchanged by the growth.
    grown_model = build_concept_model(task.input_dim, model.graph, model.params, seed=0)
    load_arrays(grown_model, grown)
    with torch.no_grad():
        new_logits = grown_model.eval()(torch.from_numpy(task.test.x))
    for node in old_graph.nodes:
        torch.testing.assert_close(new_logits[node], old_logits[node], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("family", ["cbm", "cgm"])
def test_static_never_grows(make_task, make_params, family: str) -> None:
    # Prepare / Execute
    _task, server, grid, _first, second, before, _, old_graph = _grow_scenario(make_task, make_params, family, "static")

    # Assert: same graph and tensors as after round 1; the newcomer still trains what it can.
    model = server.model
    assert model is not None
    assert model.graph == old_graph
    assert "c" not in model.graph.nodes
    assert "param_change_ratio" not in second
    assert server.changes == []
    assert set(model.state_dict()) == set(before)
    assert 2 in grid.messages(2, TRAIN)
    assert server.evaluate(2)["coverage"] == pytest.approx(3 / 4)


@pytest.mark.parametrize("family", ["cbm", "cgm"])
def test_reinit_rebuilds_every_parameter_when_the_graph_changes(make_task, make_params, family: str) -> None:
    # Prepare / Execute
    _task, server, grid, _first, second, before, _, _ = _grow_scenario(make_task, make_params, family, "reinit")

    # Assert: the rebuilt model has c, and not one tensor kept its value.
    rebuilt = grid.messages(2, TRAIN)[2].arrays
    model = server.model
    assert model is not None
    assert "c" in model.graph.nodes
    common = [n for n in before if n in rebuilt and rebuilt[n].shape == before[n].shape]
    assert any(n.startswith(model.ENCODER_PREFIX) for n in common)
    for name in common:
        assert not np.array_equal(rebuilt[name], before[name]), name

    def total(arrays: Mapping[str, np.ndarray]) -> int:
        return sum(a.size for a in arrays.values())

    assert second["param_change_ratio"] == pytest.approx(total(rebuilt) / total(before))


@pytest.mark.parametrize("growth", ["grow", "static"])
def test_coverage_is_full_only_when_the_model_predicts_every_ancestor(make_task, make_params, growth: str) -> None:
    # Prepare / Execute
    _, server, *_ = _grow_scenario(make_task, make_params, "cbm", growth)

    # Assert: the true ancestors are a, b, c; only grown models reach c.
    assert server.evaluate(2)["coverage"] == pytest.approx(1.0 if growth == "grow" else 3 / 4)


@pytest.mark.parametrize(
    ("subsets", "expected"),
    [((("a", "b", "y"),), 3 / 4), ((("a", "b"),), 2 / 4), ((("a",), ("c", "y")), 3 / 4), (GROWTH_SUBSETS, 1.0)],
    ids=["lacks-c", "no-task-labels", "lacks-b", "complete"],
)
def test_coverage_reported_by_a_run(make_task, make_params, run_federation, subsets, expected: float) -> None:
    # Prepare
    task = make_task(subsets)

    # Execute
    _, history = run_federation(task, make_params("cbm"), rounds=1)

    # Assert
    assert history[-1].metrics["coverage"] == pytest.approx(expected)


# --------------------------------------------------------------------------- invalid registrations


def _set_confidence(transform: Callable[[np.ndarray], np.ndarray]) -> Callable[[Message], None]:
    def tamper(reply: Message) -> None:
        reply.arrays["confidence"] = transform(np.array(reply.arrays["confidence"]))

    return tamper


def _both_ways(values: np.ndarray) -> np.ndarray:
    values[0, 1] = values[1, 0] = 0.7  # a -> b and b -> a: 1.4 > 1
    return values


def _out_of_range(values: np.ndarray) -> np.ndarray:
    values[0, 1] = 1.5
    return values


def _foreign_names(reply: Message) -> None:
    reply.config["confidence_names"] = json.dumps(["a", "b", "c", "zeta"])


def _no_samples(reply: Message) -> None:
    reply.metrics["num_examples"] = 0.0


def _missing_concepts(reply: Message) -> None:
    del reply.config["concepts"]


TAMPERINGS = {
    "edge-both-ways": (_set_confidence(_both_ways), "sum to"),
    "out-of-range": (_set_confidence(_out_of_range), r"\[0, 1\]"),
    "wrong-size": (_set_confidence(lambda v: v[:2, :2]), "2x2"),
    "not-square": (_set_confidence(lambda v: v[:, :3]), "square"),
    "foreign-names": (_foreign_names, "zeta"),
    "no-samples": (_no_samples, "num_examples"),
    "missing-field": (_missing_concepts, "concepts"),
}


@pytest.mark.parametrize(("tamper", "reason"), TAMPERINGS.values(), ids=TAMPERINGS.keys())
def test_an_invalid_registration_is_rejected_with_a_reason_and_the_client_excluded(
    make_task, make_params, tamper, reason: str
) -> None:
    # Prepare: client 2, the only one with c, sends an invalid registration.
    task = make_task(GROWTH_SUBSETS, rounds=2)
    params = make_params("cgm")
    server = FCMServer(task, params)
    grid = RecordingGrid(_factory(task, params, {2: tamper}))
    federation = Federation(server, grid, Schedule(num_clients=3), seed=0, rounds=2)

    # Execute
    history = federation.run()

    # Assert: the run went on without client 2 and says why.
    assert [r.status for r in history] == ["ok", "ok"]
    assert 2 in server.rejected
    assert 2 not in server.registry
    assert re.search(reason, server.rejected[2]), server.rejected[2]
    assert server.model is not None
    assert "c" not in server.model.graph.nodes
    delivered_to_2 = [(r, m.kind) for r, c, m in grid.sent if c == 2]
    assert delivered_to_2 == [(1, REGISTER)]  # asked once, never trained
    assert server.artifacts()["rejected"] == {"2": server.rejected[2]}


def test_a_newcomer_contradicting_a_known_cardinality_is_rejected_without_crashing(make_task, make_params) -> None:
    # Prepare: client 2 joins in round 2 claiming b has 4 values (everyone else: 3).
    def four_values_of_b(reply: Message) -> None:
        cards = json.loads(str(reply.config["cardinalities"]))
        reply.config["cardinalities"] = json.dumps({**cards, "b": 4})

    task = make_task(GROWTH_SUBSETS)
    params = make_params("cbm")
    server = FCMServer(task, params)
    grid = RecordingGrid(_factory(task, params, {2: four_values_of_b}))
    _round(server, grid, 1, [0, 1])

    # Execute
    _round(server, grid, 2, [0, 1, 2])

    # Assert
    assert 2 in server.rejected
    assert server.model is not None
    assert server.model.graph.cardinalities["b"] == 3


# --------------------------------------------------------------------------- early stopping and the best model


def _scripted_run(
    make_task,
    make_params,
    val_losses: list[float],
    *,
    patience: int,
    last_arrival: int = 1,
    rounds: int = 10,
    joins: Mapping[int, int] | None = None,
    subsets=GROWTH_SUBSETS,
    task_losses: list[float] | None = None,
    silent_rounds: frozenset[int] = frozenset(),
    selection: str = "task",
):  # type: ignore[no-untyped-def]
    """A run whose clients report ``val_losses[round - 1]`` and nudge every received tensor by +0.01.

    Each client also reports a validation task loss, ``task_losses[round - 1]``
    (``val_losses`` when not given); in ``silent_rounds`` no client has validation rows.
    """
    task = make_task(subsets, rounds=rounds, last_arrival=last_arrival)
    params = make_params("cbm", patience=patience, aggregation="full", selection=selection)
    server = FCMServer(task, params)
    task_losses = val_losses if task_losses is None else task_losses

    def reply(rnd: int, k: int, message: Message) -> Message:
        arrays = {n: (a + 0.01).astype(a.dtype) for n, a in message.arrays.items()}
        metrics = {"num_examples": 100.0, "val_examples": 0.0, "train_loss": 1.0}
        if rnd not in silent_rounds:
            metrics.update(val_examples=10.0, val_loss=val_losses[rnd - 1])
            metrics.update(val_task_examples=10.0, val_task_loss=task_losses[rnd - 1])
        return Message(arrays=arrays, metrics=metrics)

    grid = ScriptedGrid(_factory(task, params), reply)
    schedule = Schedule(num_clients=3, joins=dict(joins or {}))
    history = Federation(server, grid, schedule, seed=0, rounds=rounds).run()
    return task, server, grid, history


WORSENING = [1.0, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3]


@pytest.mark.parametrize(("patience", "stop"), [(1, 3), (2, 4), (3, 5)])
def test_a_run_stops_after_patience_rounds_without_improvement(
    make_task, make_params, patience: int, stop: int
) -> None:
    # Execute: the best validation loss is reported in round 2.
    _, server, _, history = _scripted_run(make_task, make_params, WORSENING, patience=patience)

    # Assert
    assert len(history) == stop
    assert server.done()


def test_an_improvement_restarts_the_patience_count(make_task, make_params) -> None:
    # Execute
    losses = [1.0, 0.9, 0.95, 0.8, 0.85, 0.9, 0.95, 1.0, 1.0, 1.0]
    _, _, _, history = _scripted_run(make_task, make_params, losses, patience=2)

    # Assert: bad in 3, better in 4, bad in 5 and 6.
    assert len(history) == 6


def test_no_early_stop_before_the_last_arrival(make_task, make_params) -> None:
    # Execute: patience runs out in round 4, but client 2 (no new concept) joins only in round 7.
    subsets = (("a", "b", "y"), ("a", "b"), ("a", "b", "y"))
    _, server, _, history = _scripted_run(
        make_task, make_params, WORSENING, patience=2, last_arrival=7, joins={2: 7}, subsets=subsets
    )

    # Assert
    assert len(history) == 7
    assert server.done()
    assert server.changes == []


def test_a_model_change_restarts_the_search_for_the_best_validation_loss(make_task, make_params) -> None:
    # Execute: client 2 joins in round 7 with c; the grown model is judged once trained, from round 8 on.
    _, server, _, history = _scripted_run(make_task, make_params, WORSENING, patience=2, last_arrival=7, joins={2: 7})

    # Assert: round 8 is the grown model's best so far; rounds 9 and 10 are worse.
    assert [c["round"] for c in server.changes] == [7]
    assert len(history) == 10
    assert history[-1].metrics["best_round"] == 7.0


def test_the_model_sent_as_it_grows_is_never_the_tested_one(make_task, make_params) -> None:
    # Execute: client 2 joins in round 7 with c; the model sent in round 7, whose module for c no
    # client has trained, has the lowest validation task loss after the growth.
    task_losses = [1.0, 0.5, 0.6, 0.7, 0.8, 0.9, 0.1, 0.9, 0.95, 1.0]
    _, server, _, history = _scripted_run(
        make_task, make_params, WORSENING, patience=3, last_arrival=7, joins={2: 7}, task_losses=task_losses
    )

    # Assert: the model sent in round 8 is tested; round 7 counted neither as best nor towards the patience.
    assert [c["round"] for c in server.changes] == [7]
    assert history[-1].metrics["best_round"] == 7.0
    assert history[-1].metrics["selection_loss"] == 0.9


def test_the_model_is_selected_on_the_validation_task_loss_not_the_whole_loss(make_task, make_params) -> None:
    # Execute: the whole loss (concepts included) is lowest in round 2, the task loss in round 5.
    task_losses = [1.0, 0.9, 0.8, 0.7, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85]
    _, _, _, history = _scripted_run(make_task, make_params, WORSENING, patience=2, task_losses=task_losses)

    # Assert: the model sent in round 5 is tested (best_round 4); patience ran out after round 7.
    assert history[-1].metrics["best_round"] == 4.0
    assert len(history) == 7


def test_the_whole_loss_selects_the_model_when_asked_as_the_reference_code_does(make_task, make_params) -> None:
    # Execute: the whole loss (concepts included) is lowest in round 2, the task loss in round 5.
    task_losses = [1.0, 0.9, 0.8, 0.7, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85]
    _, _, _, history = _scripted_run(
        make_task, make_params, WORSENING, patience=2, task_losses=task_losses, selection="loss"
    )

    # Assert: the model sent in round 2 is tested (best_round 1); patience ran out after round 4.
    assert history[-1].metrics["best_round"] == 1.0
    assert len(history) == 4


def test_the_untrained_initial_model_is_never_the_tested_one(make_task, make_params) -> None:
    # Execute: the model sent in round 1, which no client has trained, has the lowest validation
    # task loss of the run (near-uniform predictions on a task the inputs barely predict).
    task_losses = [0.4, 0.5, 0.6, 0.55, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2]
    _, server, _, history = _scripted_run(make_task, make_params, WORSENING, patience=2, task_losses=task_losses)

    # Assert: the model sent in round 2 is tested; round 1 counted neither as best nor towards the patience.
    assert history[-1].metrics["best_round"] == 1.0
    assert history[-1].metrics["selection_loss"] == 0.5
    assert len(history) == 4
    assert server.rounds_trained_since_change == 4


def test_ties_on_the_task_loss_are_broken_by_the_whole_loss(make_task, make_params) -> None:
    # Execute: the task loss ties from round 2 on; the whole loss is lowest in round 3.
    whole = [1.0, 0.9, 0.5, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3]
    _, _, _, history = _scripted_run(make_task, make_params, whole, patience=3, task_losses=[1.0] + [0.5] * 9)

    # Assert
    assert history[-1].metrics["best_round"] == 2.0


def test_a_round_without_validation_rows_is_ignored_by_selection_and_patience(make_task, make_params) -> None:
    # Execute: round 3's replies hold no validation rows (a weighted mean of nothing).
    _, _server, _, history = _scripted_run(make_task, make_params, WORSENING, patience=2, silent_rounds=frozenset({3}))

    # Assert: round 2's model stays the best; rounds 4 and 5 exhaust the patience.
    assert history[-1].metrics["best_round"] == 1.0
    assert len(history) == 5
    assert "val_loss" not in history[2].metrics
    assert "val_task_loss" not in history[2].metrics


def test_patience_zero_disables_early_stopping(make_task, make_params) -> None:
    # Execute
    _, server, _, history = _scripted_run(make_task, make_params, WORSENING, patience=0)

    # Assert
    assert len(history) == 10
    assert not server.done()


def test_the_final_evaluation_tests_the_best_model(make_task, make_params) -> None:
    # Prepare / Execute: the model sent in round 2 (after round 1's aggregation) has the best
    # validation loss; the run stops after round 4.
    task, server, grid, history = _scripted_run(make_task, make_params, WORSENING, patience=2)

    # Assert
    best_arrays = _union(grid.messages(2, TRAIN))
    model = server.model
    assert model is not None
    assert any(not np.array_equal(best_arrays[n], a) for n, a in model_to_arrays(model).items())
    best = build_concept_model(task.input_dim, model.graph, model.params, seed=1)
    load_arrays(best, best_arrays)
    final = history[-1].metrics
    scores = concept_scores(best, task.test, task.true_ancestors)
    assert final["accuracy"] == scores["task_accuracy"]
    assert final["concept_accuracy"] == scores["concept_accuracy"]
    assert final["best_round"] == 1.0


def test_intermediate_evaluations_test_the_current_model(make_task, make_params) -> None:
    # Prepare / Execute
    _task, _server, _, history = _scripted_run(make_task, make_params, WORSENING, patience=2)

    # Assert: round 3 reported the model of that moment, not the best one; no final metrics yet.
    assert "full_intervention_accuracy" not in history[2].metrics
    assert "full_intervention_accuracy" in history[-1].metrics


def test_the_final_evaluation_reports_the_intervention_gain_and_per_concept_accuracies(make_task, make_params) -> None:
    # Execute
    task, server, _, history = _scripted_run(make_task, make_params, WORSENING, patience=2)

    # Assert: gain = noisy accuracy with every concept intervened on minus with none.
    final = history[-1].metrics
    assert final["intervention_gain"] == pytest.approx(
        final["noisy_full_intervention_accuracy"] - final["noisy_accuracy"]
    )
    per_concept = server.artifacts()["per_concept"]
    assert set(per_concept) == set(task.true_ancestors)
    assert final["balanced_concept_accuracy"] == pytest.approx(
        np.mean([v["balanced_accuracy"] for v in per_concept.values()])
    )


def test_a_client_with_nothing_to_validate_does_not_dilute_the_validation_loss(make_task, make_params) -> None:
    # Prepare: a static model of client 0's concepts; client 1 labels only c, which the model lacks.
    task = make_task((("a", "b", "y"), ("c",)))
    params = make_params("cbm", growth="static")
    servers = [FCMServer(task, params) for _ in range(2)]
    grids = [RecordingGrid(_factory(task, params)) for _ in range(2)]
    for server, grid in zip(servers, grids, strict=True):
        _round(server, grid, 1, [0])

    # Execute: round 2 with and without client 1 (client 0 validates the same model either way).
    with_idle = _round(servers[0], grids[0], 2, [0, 1])
    alone = _round(servers[1], grids[1], 2, [0])

    # Assert
    assert with_idle["val_loss"] == pytest.approx(alone["val_loss"])


# --------------------------------------------------------------------------- determinism and checkpoints


def _comparable(history) -> list[dict]:  # type: ignore[no-untyped-def]
    return [{k: v for k, v in r.to_dict().items() if k != "wall_time_s"} for r in history]


def test_a_run_is_determined_by_its_seed(make_task, make_params, run_federation) -> None:
    # Prepare
    task = make_task(GROWTH_SUBSETS, rounds=2)
    params = make_params("cgm")

    # Execute
    first, h1 = run_federation(task, params, rounds=2, seed=3)
    again, h2 = run_federation(task, params, rounds=2, seed=3)
    other, _ = run_federation(task, params, rounds=2, seed=4)

    # Assert
    assert _comparable(h1) == _comparable(h2)
    a1, a2, a3 = (model_to_arrays(s.model) for s in (first, again, other))
    assert all(np.array_equal(a1[n], a2[n]) for n in a1)
    assert any(not np.array_equal(a1[n], a3[n]) for n in a1)


def test_the_final_artifacts_record_the_true_edges_where_the_network_is_known(
    make_task, make_params, run_federation
) -> None:
    # Prepare: the same task with and without its true graph
    unknown = make_task(GROWTH_SUBSETS, rounds=1)
    known = dataclasses.replace(unknown, true_edges=(("a", "b"), ("b", "y")))
    params = make_params("cbm")

    # Execute
    with_truth, _ = run_federation(known, params, rounds=1)
    without, _ = run_federation(unknown, params, rounds=1)

    # Assert
    assert with_truth.artifacts()["true_edges"] == [["a", "b"], ["b", "y"]]
    assert "true_edges" not in without.artifacts()


def test_state_dict_round_trips_through_load_state_dict(make_task, make_params) -> None:
    # Prepare: a server with a registry, a grown model, a best model and a change record.
    task, server, *_ = _grow_scenario(make_task, make_params, "cgm", "grow")
    state = server.state_dict()

    # Execute
    restored = FCMServer(task, make_params("cgm", growth="grow"))
    restored.load_state_dict(state)

    # Assert
    again = restored.state_dict()
    assert again.config == state.config
    assert set(again.arrays) == set(state.arrays)
    for name, array in state.arrays.items():
        np.testing.assert_array_equal(again.arrays[name], array, err_msg=name)
    assert restored.registry == server.registry
    assert restored.changes == server.changes


@pytest.mark.parametrize("family", ["cbm", "cgm"])
def test_resuming_from_a_checkpoint_continues_like_an_uninterrupted_run(
    make_task, make_params, run_federation, tmp_path: Path, family: str
) -> None:
    # Prepare: client 2 joins (and grows the model) in round 2; the run is cut after round 3.
    task = make_task(GROWTH_SUBSETS, rounds=4)
    params = make_params(family)
    whole, expected = run_federation(task, params, rounds=4, joins={2: 2}, seed=5)
    checkpoint = tmp_path / "run.npz"
    run_federation(task, params, rounds=3, joins={2: 2}, seed=5, checkpoint=checkpoint)

    # Execute: fresh server, engine and clients, resumed from the checkpoint.
    resumed, history = run_federation(task, params, rounds=4, joins={2: 2}, seed=5, checkpoint=checkpoint, resume=True)

    # Assert
    assert _comparable(history) == _comparable(expected)
    a, b = model_to_arrays(whole.model), model_to_arrays(resumed.model)
    assert set(a) == set(b)
    assert all(np.array_equal(a[n], b[n]) for n in a)


@pytest.mark.parametrize("growth", ["grow", "reinit"])
def test_resuming_before_a_growth_continues_like_an_uninterrupted_run(
    make_task, make_params, run_federation, tmp_path: Path, growth: str
) -> None:
    # Prepare: the run is cut after round 2; client 2 joins (and changes the graph) in round 3.
    task = make_task(GROWTH_SUBSETS, rounds=4, last_arrival=3)
    params = make_params("cgm", growth=growth)
    whole, expected = run_federation(task, params, rounds=4, joins={2: 3}, seed=5)
    checkpoint = tmp_path / "run.npz"
    run_federation(task, params, rounds=2, joins={2: 3}, seed=5, checkpoint=checkpoint)

    # Execute
    resumed, history = run_federation(task, params, rounds=4, joins={2: 3}, seed=5, checkpoint=checkpoint, resume=True)

    # Assert
    a, b = model_to_arrays(whole.model), model_to_arrays(resumed.model)
    assert set(a) == set(b)
    assert all(np.array_equal(a[n], b[n]) for n in a)
    assert _comparable(history) == _comparable(expected)
