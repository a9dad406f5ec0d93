"""The client side of the bridge: state in context.state (and on the site's disk), partitions from the node config."""

from pathlib import Path

import numpy as np
import pytest
from flwr.app import Context, RecordDict
from flwr.app import Message as FlowerMessage

from fedmosaic.errors import FedmosaicError
from fedmosaic.federation import ClientState, Message
from fedmosaic.federation.flower.client import handle_flower_message, load_state, partition_of, save_state
from fedmosaic.federation.flower.grid import PARTITION, PARTITION_QUERY
from fedmosaic.federation.flower.records import category, from_record_dict, to_record_dict


def _context(node_config: dict, run_id: int = 1) -> Context:
    return Context(run_id=run_id, node_id=9, node_config=node_config, state=RecordDict(), run_config={})


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
    assert load_state(context, "0/federated", "1").config == {"handled": 2}
    np.testing.assert_array_equal(load_state(context, "0/federated", "1").arrays["last_reply"], second.arrays["w"])


def test_the_state_round_trips_through_context_state_for_its_own_flower_run_only() -> None:
    context = _context({})
    state = ClientState(arrays={"m": np.arange(3, dtype=np.float32)}, config={"joined": 4, "names": ["a", "b"]})

    save_state(context, "0/federated", "1", state)
    back = load_state(context, "0/federated", "1")

    assert back.config == state.config
    np.testing.assert_array_equal(back.arrays["m"], state.arrays["m"])
    assert back.arrays["m"].dtype == np.float32
    assert load_state(context, "3/federated", "1") is None
    assert load_state(context, "0/federated", "2") is None  # a later Flower run (a resume) does not see it


def test_a_restarted_node_continues_from_the_state_on_its_disk(fake_flower_grid, toy_client, tmp_path: Path) -> None:
    """A restarted node continues from the client state it wrote to its disk.

    Rounds 1-3 on one node, then a new node process (empty context.state) in a new Flower run resumes at round 3:
    it continues from its round-2 state, and drops the round-3 file of the abandoned run.
    """
    # Prepare
    config = {"partition-id": 0, "state-dir": str(tmp_path / "state")}
    header = {"seed": 0, "client": 0, "job": "0/federated"}

    def logic(header, partition, context):
        return toy_client(partition)

    first_run = _context(config, run_id=1)
    model = Message(arrays={"w": np.zeros(3)})
    for rnd in (1, 2, 3):
        handle_flower_message(_to_node(model, header | {"round": rnd}), first_run, logic)
    resumed = _context(config, run_id=2)

    # Execute
    reply, _ = from_record_dict(handle_flower_message(_to_node(model, header | {"round": 3}), resumed, logic).content)

    # Assert
    assert reply.config["handled"] == 3  # rounds 1 and 2 before, this one
    assert load_state(resumed, "0/federated", "2").config == {"handled": 3}


def test_without_a_state_dir_a_new_run_starts_from_an_empty_state(fake_flower_grid, toy_client) -> None:
    """Flower hands a later run of the same series the earlier run's context.state: the run mark keeps it apart."""
    header = {"seed": 0, "client": 0, "job": "0/federated"}

    def logic(header, partition, context):
        return toy_client(partition)

    model = Message(arrays={"w": np.zeros(3)})
    first = _context({"partition-id": 0}, 1)
    handle_flower_message(_to_node(model, header | {"round": 1}), first, logic)
    later = _context({"partition-id": 0}, 2)
    later.state = first.state

    reply = handle_flower_message(_to_node(model, header | {"round": 2}), later, logic)

    assert from_record_dict(reply.content)[0].config["handled"] == 1


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


def test_a_simulated_node_without_node_config_keeps_its_states_in_the_folder_the_header_names(
    fake_flower_grid, toy_client, tmp_path: Path
) -> None:
    """Flower's simulation runs each job afresh (an empty context.state); the next job's node continues from the disk."""
    # Prepare
    header = {"seed": 0, "client": 0, "job": "0/federated", "state-dir": str(tmp_path / "simulation")}

    def logic(header, partition, context):
        return toy_client(partition)

    model = Message(arrays={"w": np.zeros(3)})
    handle_flower_message(_to_node(model, header | {"round": 1}), _context({"partition-id": 0}, 1), logic)

    # Execute
    reply = handle_flower_message(_to_node(model, header | {"round": 2}), _context({"partition-id": 0}, 2), logic)

    # Assert
    assert from_record_dict(reply.content)[0].config["handled"] == 2
