"""ParallelGrid: a round's clients in worker processes, with the in-process engine's results."""

import os
from pathlib import Path

import numpy as np
import pytest

from fedmosaic.federation import ClientContext, ClientLogic, ClientState, InProcessGrid, Message
from fedmosaic.federation.parallel import ParallelGrid
from fedmosaic.federation.processes import WorkerFailed
from fedmosaic.federation.shared import shared_folder


class Counter(ClientLogic):
    """Counts its messages in its state and draws from its derived seed."""

    def __init__(self, client_id: int) -> None:
        self.client_id = client_id

    def handle(self, message: Message, state: ClientState, context: ClientContext) -> Message:
        if context.round == 99 and context.client_id == 0:
            raise ValueError(f"client {context.client_id} cannot go on")
        state.config["handled"] = int(state.config.get("handled", 0)) + 1
        draw = np.random.default_rng(context.seed).random(3)
        return Message(
            arrays={"w": message.arrays["w"] * 2 + draw[0], "pid": np.array([os.getpid()])},
            config={"handled": state.config["handled"]},
            metrics={"draw": float(draw[1])},
        )


def _broadcast(clients: list[int]) -> dict[int, Message]:
    model = np.linspace(0, 1, 50_000, dtype=np.float32)  # large: travels through shared memory
    return {c: Message(arrays={"w": model}) for c in clients}


def _exchange(grid, rounds: int = 3) -> list[dict[int, Message]]:
    return [
        grid.send_and_receive(_broadcast([0, 1, 2, 3, 4]), rnd=rnd, failing=frozenset({3}) if rnd == 2 else frozenset())
        for rnd in range(1, rounds + 1)
    ]


def test_replies_are_those_of_the_in_process_engine_in_client_order() -> None:
    # Execute
    with ParallelGrid(Counter, seed=5, workers=2) as parallel:
        got = _exchange(parallel)
        states = parallel.client_states()
    expected = _exchange(InProcessGrid(Counter, seed=5))
    # Assert
    for ours, theirs in zip(got, expected, strict=True):
        assert list(ours) == list(theirs)
        for client in ours:
            np.testing.assert_array_equal(ours[client].arrays["w"], theirs[client].arrays["w"])
            assert ours[client].metrics == theirs[client].metrics
            assert ours[client].config == theirs[client].config
            assert not ours[client].arrays["w"].flags.writeable
    assert states[0].config == {"handled": 3}
    assert states[3].config == {"handled": 2}


def test_each_client_always_runs_in_the_same_worker() -> None:
    with ParallelGrid(Counter, seed=0, workers=2) as grid:
        rounds = _exchange(grid)
    pids = {c: {int(r[c].arrays["pid"][0]) for r in rounds if c in r} for c in range(5)}
    assert all(len(p) == 1 for p in pids.values())
    assert pids[0] == pids[2] != pids[1]


def test_restored_states_go_to_the_workers_of_their_clients() -> None:
    with ParallelGrid(Counter, seed=0, workers=3) as grid:
        grid.load_client_states({c: ClientState(config={"handled": 10 + c}) for c in range(5)})
        replies = grid.send_and_receive(_broadcast([0, 4]), rnd=1, failing=frozenset())
    assert replies[0].config["handled"] == 11
    assert replies[4].config["handled"] == 15


def test_a_failing_client_is_a_one_line_error_and_the_workers_stop() -> None:
    grid = ParallelGrid(Counter, seed=0, workers=2)
    with pytest.raises(WorkerFailed) as caught, grid:
        grid.send_and_receive(_broadcast([0, 1]), rnd=99, failing=frozenset())
    assert str(caught.value) == "client 0 failed in round 99: ValueError: client 0 cannot go on"
    assert grid._pool._processes[0].exitcode is not None


def test_no_shared_file_is_left_behind() -> None:
    with ParallelGrid(Counter, seed=0, workers=2) as grid:
        _exchange(grid)
        prefix = grid._prefix
    assert not list(Path(shared_folder()).glob(f"{prefix}*"))
