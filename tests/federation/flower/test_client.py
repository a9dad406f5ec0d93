"""The client side of the bridge: state in context.state, partitions from the node config."""

import numpy as np
import pytest
from flwr.app import Context, RecordDict
from flwr.app import Message as FlowerMessage

from fedmosaic.errors import FedmosaicError
from fedmosaic.federation import ClientState, Message
from fedmosaic.federation.flower.client import handle_flower_message, load_state, partition_of, save_state
from fedmosaic.federation.flower.grid import PARTITION, PARTITION_QUERY
from fedmosaic.federation.flower.records import category, from_record_dict, to_record_dict


def _context(node_config: dict) -> Context:
    return Context(run_id=1, node_id=9, node_config=node_config, state=RecordDict(), run_config={})


def _to_node(message: Message, header: dict) -> FlowerMessage:
    return FlowerMessage(to_record_dict(message, header), dst_node_id=9, message_type=category(message.kind))


def test_client_state_is_kept_in_context_state_per_job(fake_flower_grid, toy_client) -> None:
    # Prepare
    context = _context({"partition-id": 2})
    header = {"seed": 0, "round": 1, "client": 2, "job": "0/federated"}

    def logic(header, partition, context):
        return toy_client(partition)

    # Execute
    first, _ = from_record_dict(
        handle_flower_message(_to_node(Message(arrays={"w": np.zeros(3)}), header), context, logic).content
    )
    second, _ = from_record_dict(
        handle_flower_message(
            _to_node(Message(arrays={"w": np.zeros(3)}), header | {"round": 2}), context, logic
        ).content
    )
    other_job, _ = from_record_dict(
        handle_flower_message(
            _to_node(Message(arrays={"w": np.zeros(3)}), header | {"job": "1/federated"}), context, logic
        ).content
    )

    # Assert
    assert (first.config["handled"], second.config["handled"], other_job.config["handled"]) == (1, 2, 1)
    assert load_state(context, "0/federated").config == {"handled": 2}
    np.testing.assert_array_equal(load_state(context, "0/federated").arrays["last_reply"], second.arrays["w"])


def test_the_state_round_trips_through_context_state() -> None:
    context = _context({})
    state = ClientState(arrays={"m": np.arange(3, dtype=np.float32)}, config={"joined": 4, "names": ["a", "b"]})

    save_state(context, "0/federated", state)
    back = load_state(context, "0/federated")

    assert back.config == state.config
    np.testing.assert_array_equal(back.arrays["m"], state.arrays["m"])
    assert back.arrays["m"].dtype == np.float32
    assert load_state(context, "3/federated") == ClientState()


def test_a_node_answers_the_partition_query_from_its_node_config(fake_flower_grid) -> None:
    reply = handle_flower_message(_to_node(Message(kind=PARTITION_QUERY), {}), _context({"partition-id": 4}), None)

    answer, _ = from_record_dict(reply.content)
    assert answer.config == {PARTITION: 4}


def test_a_message_for_another_partition_is_refused(fake_flower_grid, toy_client) -> None:
    header = {"seed": 0, "round": 1, "client": 1, "job": "0/federated"}

    with pytest.raises(FedmosaicError, match="client 1 reached the node of partition 0"):
        handle_flower_message(_to_node(Message(), header), _context({"partition-id": 0}), lambda *_: toy_client(1))


def test_a_node_without_a_partition_id_is_told_how_to_set_it() -> None:
    with pytest.raises(FedmosaicError, match="partition-id"):
        partition_of(_context({}))
