"""Specification of stacked training: a round's F-CMs clients trained together reply as each alone would."""

from __future__ import annotations

import numpy as np
import pytest

from fedmosaic.federation import Message
from fedmosaic.federation.host import ClientHost
from fedmosaic.methods.arrays import model_to_arrays
from fedmosaic.methods.concepts.client import TRAIN, FCMClient
from fedmosaic.methods.concepts.models import ConceptGraph, build_concept_model
from fedmosaic.methods.concepts.task import ConceptTask, encode_graph
from fedmosaic.methods.train_params import TrainParams

GRAPH = ConceptGraph(("a", "b", "c", "y"), "y", {"a": 2, "b": 3, "c": 2, "y": 2}, {"b": ("a",), "y": ("b", "c")})
#: Clients of different sizes (one shorter than a batch) labeling different nodes (client 2 without the task).
SIZES = (150, 90, 130, 40)
TRAIN_PARAMS = TrainParams(
    optimizer="adam", optimizer_state="kept", lr=0.01, weight_decay=0.01, batch_size=64, epochs=2
)


def _host(task: ConceptTask, params: object, train: TrainParams = TRAIN_PARAMS) -> ClientHost:
    return ClientHost(lambda k: FCMClient(task.clients[k], params, train, task.cardinalities), seed=3)  # type: ignore[arg-type]


def _messages(task: ConceptTask, params: object, seed: int) -> dict[int, Message]:
    model = build_concept_model(task.input_dim, GRAPH, params.model, seed=seed)  # type: ignore[attr-defined]
    message = Message(kind=TRAIN, arrays=model_to_arrays(model), config={"graph": encode_graph(GRAPH), "round": 1})
    return dict.fromkeys(range(len(task.clients)), message)


def _assert_close(got: dict[str, np.ndarray], want: dict[str, np.ndarray]) -> None:
    assert sorted(got) == sorted(want)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], atol=1e-5, rtol=0, err_msg=name)


@pytest.mark.parametrize(("family", "optimizer_state"), [("cgm", "kept"), ("c2bm", "kept"), ("cgm", "fresh")])
def test_clients_trained_together_reply_and_keep_state_as_each_trained_alone(
    family: str, optimizer_state: str, make_task, make_client_data, make_params
) -> None:
    # Prepare: two rounds, so that the second starts from each client's kept Adam state (a fresh one: from none).
    subsets = (("a", "b", "y"), ("b", "c", "y"), ("a", "b"), ("a", "b", "c", "y"))
    clients = [make_client_data(s, seed=k, n_train=n) for k, (s, n) in enumerate(zip(subsets, SIZES, strict=True))]
    task = make_task(clients=clients)
    params = make_params(family, aggregation="module")
    train = TRAIN_PARAMS.model_copy(update={"optimizer_state": optimizer_state})
    together, alone = _host(task, params, train), _host(task, params, train)

    for rnd in (1, 2):
        messages = _messages(task, params, seed=rnd)

        # Execute
        batches = list(together.batches(messages))
        batched = together.handle_all(messages, rnd)
        single = {client: alone.handle(client, message, rnd) for client, message in messages.items()}

        # Assert
        assert batches == [[0, 1, 2, 3]]
        for client in messages:
            _assert_close(dict(batched[client].arrays), dict(single[client].arrays))
            assert batched[client].metrics == pytest.approx(single[client].metrics, abs=1e-5)
            _assert_close(together.states.get(client).arrays, alone.states.get(client).arrays)
    # Module-wise: client 2 labels no task, so it neither uploads nor keeps state for the task's module.
    assert not any("n_y." in name for name in batched[2].arrays)
    assert not any("n_y." in name for name in together.states.get(2).arrays)


def test_dp_sgd_and_sgd_clients_are_handled_one_by_one(make_task, make_params) -> None:
    # Prepare
    task = make_task()
    params = make_params("cgm")
    messages = _messages(task, params, seed=0)
    hosts = {
        name: ClientHost(lambda k, t=train: FCMClient(task.clients[k], params, t, task.cardinalities), seed=0)
        for name, train in (
            ("sgd", TrainParams(optimizer="sgd")),
            ("dp", TrainParams(optimizer="adam", dp_noise_multiplier=1.0)),
            ("adam", TrainParams(optimizer="adam")),
        )
    }

    # Execute
    batches = {name: list(host.batches(messages)) for name, host in hosts.items()}

    # Assert
    assert batches == {"sgd": [[0], [1], [2], [3]], "dp": [[0], [1], [2], [3]], "adam": [[0, 1, 2, 3]]}
