"""Specification of the F-CMs client: registration, masked local training, uploads."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from fedmosaic.federation import ClientContext, ClientState, Message
from fedmosaic.methods.arrays import load_arrays, model_to_arrays
from fedmosaic.methods.concepts import client as client_module
from fedmosaic.methods.concepts.client import REGISTER, TRAIN, FCMClient
from fedmosaic.methods.concepts.models import ConceptGraph, ConceptModel, build_concept_model
from fedmosaic.methods.concepts.objective import Objective
from fedmosaic.methods.concepts.params import FCMParams
from fedmosaic.methods.concepts.task import ConceptTask, encode_graph

FAMILIES = ("cbm", "cem", "cgm", "c2bm")
NODES = ("a", "b", "c", "y")
# The true DAG: a -> b -> y, c -> y (the server would send the fused graph).
GRAPH = ConceptGraph(NODES, "y", {"a": 2, "b": 3, "c": 2, "y": 2}, {"b": ("a",), "y": ("b", "c")})
# Client k of the default task labels SUBSETS[k]: (a, b, y), (b, c, y), (a, b), (a, b, c, y).
WITH_TASK, B_C_Y, NO_TASK, EVERYTHING = 0, 1, 2, 3


def _global_model(task: ConceptTask, params: FCMParams, graph: ConceptGraph = GRAPH) -> ConceptModel:
    return build_concept_model(task.input_dim, graph, params.model, seed=42)


def _train_message(model: ConceptModel) -> Message:
    return Message(kind=TRAIN, arrays=model_to_arrays(model), config={"graph": encode_graph(model.graph), "round": 1})


def _context(seed: int = 7) -> ClientContext:
    return ClientContext(client_id=0, round=1, seed=seed)


def _prefixes(model: ConceptModel, nodes: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(model.node_prefix(n) for n in nodes)


def _fit(client: FCMClient, message: Message, seed: int = 7) -> Message:
    return client.handle(message.read_only(), ClientState(), _context(seed))


# --------------------------------------------------------------------------- registration


def test_register_reply_carries_beliefs_concepts_cardinalities_and_sample_count(
    make_task, make_params, make_client
) -> None:
    # Prepare
    task = make_task()
    client = make_client(task, B_C_Y, make_params())

    # Execute
    reply = client.handle(Message(kind=REGISTER), ClientState(), _context())

    # Assert
    data = task.clients[B_C_Y]
    assert reply.kind == REGISTER
    assert set(reply.arrays) == {"confidence"}
    np.testing.assert_array_equal(reply.arrays["confidence"], data.confidence.values)
    assert json.loads(str(reply.config["concepts"])) == ["b", "c", "y"]
    assert json.loads(str(reply.config["confidence_names"])) == list(data.confidence.names)
    assert json.loads(str(reply.config["cardinalities"])) == {"b": 3, "c": 2, "y": 2}
    assert reply.metrics["num_examples"] == float(len(data.train)) == 200.0


def test_register_reply_holds_nothing_per_sample(make_task, make_params, make_client) -> None:
    # Prepare
    task = make_task()
    client = make_client(task, EVERYTHING, make_params())
    rows = {len(task.clients[EVERYTHING].train), len(task.clients[EVERYTHING].val)}

    # Execute
    reply = client.handle(Message(kind=REGISTER), ClientState(), _context())

    # Assert: no array has a dimension as long as the data; the message is tiny.
    for name, array in reply.arrays.items():
        assert not set(array.shape) & rows, name
    for key, value in reply.config.items():
        assert not isinstance(value, list) or len(value) not in rows, key
    assert reply.nbytes() < 1000


# --------------------------------------------------------------------------- what is uploaded


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize(
    ("k", "labeled"),
    [(WITH_TASK, ("a", "b", "y")), (B_C_Y, ("b", "c", "y")), (NO_TASK, ("a", "b")), (EVERYTHING, NODES)],
    ids=["a-b-y", "b-c-y", "a-b", "all"],
)
def test_module_mode_uploads_only_the_encoder_and_the_labeled_nodes(
    make_task, make_params, make_client, family: str, k: int, labeled: tuple[str, ...]
) -> None:
    # Prepare: the client receives the whole model.
    task = make_task()
    params = make_params(family, aggregation="module")
    model = _global_model(task, params)
    client = make_client(task, k, params)

    # Execute
    reply = _fit(client, _train_message(model))

    # Assert: exactly the encoder's and the labeled nodes' tensors, with their shapes.
    allowed = (model.ENCODER_PREFIX, *_prefixes(model, labeled))
    expected = {name for name in model.state_dict() if name.startswith(allowed)}
    assert set(reply.arrays) == expected
    for name, array in reply.arrays.items():
        assert array.shape == tuple(model.state_dict()[name].shape), name
    for node in NODES:
        if node not in labeled:
            assert not any(name.startswith(model.node_prefix(node)) for name in reply.arrays), node


@pytest.mark.parametrize("family", FAMILIES)
def test_full_mode_uploads_every_parameter(make_task, make_params, make_client, family: str) -> None:
    # Prepare
    task = make_task()
    params = make_params(family, aggregation="full")
    model = _global_model(task, params)
    client = make_client(task, NO_TASK, params)

    # Execute
    reply = _fit(client, _train_message(model))

    # Assert
    assert set(reply.arrays) == set(model.state_dict())


@pytest.mark.parametrize("family", FAMILIES)
def test_trained_modules_change_and_reply_reports_training(make_task, make_params, make_client, family: str) -> None:
    # Prepare
    task = make_task()
    params = make_params(family)
    model = _global_model(task, params)
    sent = model_to_arrays(model)
    client = make_client(task, WITH_TASK, params)

    # Execute
    reply = _fit(client, _train_message(model))

    # Assert: the encoder and every labeled node moved; the counts are the client's.
    for node_prefix in (model.ENCODER_PREFIX, *_prefixes(model, ("a", "b", "y"))):
        names = [n for n in reply.arrays if n.startswith(node_prefix)]
        assert names, node_prefix
        assert any(not np.array_equal(reply.arrays[n], sent[n]) for n in names), node_prefix
    assert reply.metrics["num_examples"] == 200.0
    assert reply.metrics["val_examples"] == 50.0
    assert reply.metrics["train_loss"] > 0


# --------------------------------------------------------------------------- freezing


@pytest.fixture
def trained_models(monkeypatch) -> list[tuple[ConceptModel, dict[str, bool]]]:
    """Records each model the client trains, with which parameters got a gradient in the last step."""
    seen: list[tuple[ConceptModel, dict[str, bool]]] = []
    real = client_module.train_epochs

    def recording(model, x, y, **kwargs):  # type: ignore[no-untyped-def]
        loss = real(model, x, y, **kwargs)
        seen.append(
            (model, {name: p.grad is not None and bool(p.grad.abs().sum() > 0) for name, p in model.named_parameters()})
        )
        return loss

    monkeypatch.setattr(client_module, "train_epochs", recording)
    return seen


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize(
    ("k", "frozen"),
    [(WITH_TASK, ("c",)), (B_C_Y, ("a",)), (NO_TASK, ("c", "y"))],
    ids=["task-labeled", "unlabeled-ancestor", "no-task-labels"],
)
def test_module_mode_freezes_the_modules_of_unlabeled_nodes(
    make_task, make_params, make_client, trained_models, family: str, k: int, frozen: tuple[str, ...]
) -> None:
    # Prepare
    task = make_task()
    params = make_params(family, aggregation="module")
    model = _global_model(task, params)
    sent = model_to_arrays(model)
    client = make_client(task, k, params)

    # Execute
    reply = _fit(client, _train_message(model))

    # Assert: the frozen modules are not uploaded, got no gradient and kept their received values.
    ((trained, got_gradient),) = trained_models
    frozen_prefixes = _prefixes(model, frozen)
    frozen_names = [name for name in sent if name.startswith(frozen_prefixes)]
    assert frozen_names
    state = trained.state_dict()
    for name in frozen_names:
        assert name not in reply.arrays
        assert not got_gradient[name], name
        np.testing.assert_array_equal(state[name].numpy(), sent[name], err_msg=name)
    # ... while the trained modules did get gradients.
    assert any(got_gradient[name] for name in got_gradient if name.startswith(model.ENCODER_PREFIX))


def test_full_mode_trains_every_module_that_the_loss_reaches(
    make_task, make_params, make_client, trained_models
) -> None:
    # Prepare: a CBM client with task labels; in full mode c's head is trained through the task decoder.
    task = make_task()
    params = make_params("cbm", aggregation="full", intervention_prob=0.0)
    model = _global_model(task, params)
    client = make_client(task, WITH_TASK, params)

    # Execute
    _fit(client, _train_message(model))

    # Assert
    ((_, got_gradient),) = trained_models
    assert any(got_gradient[name] for name in got_gradient if name.startswith(model.node_prefix("c")))


# --------------------------------------------------------------------------- determinism and validation loss


@pytest.mark.parametrize("family", ["cbm", "cgm"])
def test_training_is_determined_by_the_context_seed(make_task, make_params, make_client, family: str) -> None:
    # Prepare: fresh clients, the same message.
    task = make_task()
    params = make_params(family)
    message = _train_message(_global_model(task, params))

    # Execute
    first = _fit(make_client(task, EVERYTHING, params), message, seed=7)
    again = _fit(make_client(task, EVERYTHING, params), message, seed=7)
    other = _fit(make_client(task, EVERYTHING, params), message, seed=8)

    # Assert
    assert first.metrics == again.metrics
    assert set(first.arrays) == set(again.arrays) == set(other.arrays)
    assert all(np.array_equal(first.arrays[n], again.arrays[n]) for n in first.arrays)
    assert any(not np.array_equal(first.arrays[n], other.arrays[n]) for n in first.arrays)


def test_training_does_not_depend_on_what_the_client_handled_before(make_task, make_params, make_client) -> None:
    # Prepare: one client already trained once (it caches its model); a fresh one.
    task = make_task()
    params = make_params("cgm")
    message = _train_message(_global_model(task, params))
    used = make_client(task, WITH_TASK, params)
    _fit(used, message, seed=1)

    # Execute
    reply_used = _fit(used, message, seed=7)
    reply_fresh = _fit(make_client(task, WITH_TASK, params), message, seed=7)

    # Assert
    assert reply_used.metrics == reply_fresh.metrics
    assert all(np.array_equal(reply_used.arrays[n], reply_fresh.arrays[n]) for n in reply_fresh.arrays)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("k", [WITH_TASK, NO_TASK])
def test_val_loss_is_the_loss_of_the_received_model_on_the_val_split(
    make_task, make_params, make_client, family: str, k: int
) -> None:
    # Prepare
    task = make_task()
    params = make_params(family)
    model = _global_model(task, params)
    message = _train_message(model)
    data = task.clients[k]

    # Execute
    reply = _fit(make_client(task, k, params), message)

    # Assert: the masked objective (no interventions) of the received model on the val samples.
    received = _global_model(task, params)
    load_arrays(received, message.arrays)
    labeled = tuple(n for n in NODES if n in data.val.names)
    objective = Objective(GRAPH, labeled, params.gamma, params.intervention_prob)
    with torch.no_grad():
        expected = objective.loss(
            received.eval(), torch.from_numpy(data.val.x), torch.from_numpy(data.val.aligned(NODES))
        )
    assert reply.metrics["val_loss"] == pytest.approx(float(expected), rel=1e-6)


def test_val_loss_ignores_the_modules_the_client_did_not_receive(make_task, make_params, make_client) -> None:
    # Prepare: the server sends (module mode) only the encoder and the modules the client needs.
    task = make_task()
    params = make_params("cgm")
    model = _global_model(task, params)
    needed = (model.ENCODER_PREFIX, *_prefixes(model, ("a", "b")))
    full = _train_message(model)
    partial = Message(
        kind=TRAIN, arrays={n: a for n, a in full.arrays.items() if n.startswith(needed)}, config=full.config
    )

    # Execute
    from_full = _fit(make_client(task, NO_TASK, params), full)
    from_partial = _fit(make_client(task, NO_TASK, params), partial)

    # Assert
    assert from_partial.metrics["val_loss"] == pytest.approx(from_full.metrics["val_loss"], rel=1e-6)
    assert set(from_partial.arrays) == set(from_full.arrays)


# --------------------------------------------------------------------------- edge cases


def test_client_whose_nodes_are_not_in_the_graph_uploads_and_validates_nothing(
    make_task, make_params, make_client
) -> None:
    # Prepare: a static model without c; a client labeling only c.
    task = make_task([("c",)])
    params = make_params("cbm")
    graph = ConceptGraph(("a", "y"), "y", {"a": 2, "y": 2}, {"y": ("a",)})
    model = _global_model(task, params, graph)

    # Execute
    reply = _fit(make_client(task, 0, params), _train_message(model))

    # Assert
    assert reply.arrays == {}
    assert reply.metrics["num_examples"] == 200.0
    assert reply.metrics["val_examples"] == 0.0


def test_unknown_message_kind_is_refused(make_task, make_params, make_client) -> None:
    # Prepare
    task = make_task()
    client = make_client(task, 0, make_params())

    # Execute / Assert
    with pytest.raises(ValueError, match="evaluate"):
        client.handle(Message(kind="evaluate"), ClientState(), _context())


def test_received_arrays_are_not_modified(make_task, make_params, make_client) -> None:
    # Prepare: read-only arrays, as the in-process engine hands them over.
    task = make_task()
    params = make_params("cgm")
    message = _train_message(_global_model(task, params))
    before = {n: a.copy() for n, a in message.arrays.items()}

    # Execute
    _fit(make_client(task, EVERYTHING, params), message)

    # Assert
    assert all(np.array_equal(message.arrays[n], before[n]) for n in before)


# --------------------------------------------------------------------------- local DP-SGD


@pytest.mark.parametrize("family", FAMILIES)
def test_dp_sgd_trains_the_masked_modules_and_reports_opacus_epsilon_per_round(
    family: str, make_task, make_params, make_client
) -> None:
    # Prepare: a client of 200 rows, batch 64 (4 batches), 1 epoch, noise 1.1; state kept across rounds.
    from opacus.accountants import RDPAccountant

    task = make_task()
    train = task.train.model_copy(update={"dp_noise_multiplier": 1.1, "dp_max_grad_norm": 1.0})
    params = make_params(family)
    client = FCMClient(task.clients[WITH_TASK], params, train, task.cardinalities)
    model = _global_model(task, params)
    state = ClientState()

    # Execute: two rounds
    replies = [client.handle(_train_message(model).read_only(), state, _context(seed)) for seed in (7, 8)]

    # Assert: epsilon after k rounds is Opacus's RDP accountant after 4k Gaussian steps at rate 64/200.
    accountant = RDPAccountant()
    for reply in replies:
        for _ in range(4):
            accountant.step(noise_multiplier=1.1, sample_rate=64 / 200)
        assert reply.metrics["dp_sgd_epsilon"] == pytest.approx(accountant.get_epsilon(1e-5))
    assert replies[1].metrics["dp_sgd_epsilon"] > replies[0].metrics["dp_sgd_epsilon"]
    # only the client's own modules (and the encoder) are uploaded, and they moved
    assert set(replies[0].arrays) == {
        n for n in model_to_arrays(model) if n.startswith((model.ENCODER_PREFIX, *_prefixes(model, ("a", "b", "y"))))
    }
    sent = model_to_arrays(model)
    assert any(not np.allclose(replies[0].arrays[n], sent[n]) for n in replies[0].arrays)
