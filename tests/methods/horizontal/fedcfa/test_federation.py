"""FedCFA end to end: a 3-client federation on the in-process grid, built by build_fedcfa."""

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fedmosaic.federation import Federation, InProcessGrid, RoundRecord, Schedule
from fedmosaic.methods.horizontal.fedcfa.build import build_fedcfa
from fedmosaic.methods.horizontal.fedcfa.params import FedCFAParams, FedCFAReferenceParams
from fedmosaic.methods.horizontal.fedcfa.server import FedCFAServer
from fedmosaic.methods.horizontal.models import ModelParams


def _run(task, params, *, seed: int, rounds: int, checkpoint: Path | None = None, resume: bool = False):
    server, clients = build_fedcfa(task, params)
    grid = InProcessGrid(clients, seed)
    schedule = Schedule(len(task.clients))
    federation = Federation(server, grid, schedule, seed=seed, rounds=rounds, checkpoint=checkpoint)
    return server, federation.run(resume=resume)


def _comparable(history: list[RoundRecord]) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.to_dict().items() if k != "wall_time_s"} for r in history]


def _assert_same_server(a: FedCFAServer, b: FedCFAServer) -> None:
    state_a, state_b = a.state_dict().arrays, b.state_dict().arrays
    assert set(state_a) == set(state_b)
    for name in state_a:
        np.testing.assert_array_equal(state_a[name], state_b[name])


def test_three_clients_run_and_the_run_is_a_function_of_the_seed(make_task, params) -> None:
    # Prepare
    task = make_task()
    # Execute
    server_a, history_a = _run(task, params, seed=3, rounds=3)
    server_b, history_b = _run(task, params, seed=3, rounds=3)
    server_c, _ = _run(task, params, seed=4, rounds=3)
    # Assert
    assert [r.status for r in history_a] == ["ok"] * 3
    assert _comparable(history_a) == _comparable(history_b)
    _assert_same_server(server_a, server_b)
    assert any(not np.array_equal(server_a.params[k], server_c.params[k]) for k in server_a.params)


def test_from_round_two_each_client_also_receives_the_previous_rounds_chunk_means(make_task, params) -> None:
    # Prepare: 40, 37, 21 samples in chunks of 16 -> 2 + 2 + 1 means of 2 inputs and 3 labels
    task = make_task()
    means = 2 + 2 + 1
    extra_per_client = means * (2 + 3) * 4  # float32 avg_x and avg_y
    # Execute
    server, history = _run(task, params, seed=0, rounds=3)
    # Assert
    assert server.average["avg_x"].shape == (means, 2)
    assert history[1].bytes_down - history[0].bytes_down == 3 * extra_per_client
    assert history[2].bytes_down == history[1].bytes_down


def test_fedcfa_learns_the_blobs(make_task, params) -> None:
    # Execute
    _, history = _run(make_task(), params, seed=0, rounds=6)
    # Assert
    assert history[-1].metrics["accuracy"] > 0.9


def test_the_builder_rejects_models_it_cannot_use(make_task) -> None:
    # Prepare (parameters of another method are refused by every method alike: tests/methods/test_contract.py)
    task = make_task()
    one_factor = type(task)(task.clients, task.test, ModelParams(hidden=[1]), task.train)
    # Execute / Assert
    with pytest.raises(ValueError, match="at least 2 factors"):
        build_fedcfa(one_factor, FedCFAParams())
    with pytest.raises(ValueError, match="split must be"):
        build_fedcfa(task, FedCFAParams(split=9))


def test_the_reference_protocol_carries_momentum_keeps_remainders_and_resumes_exactly(make_task, tmp_path) -> None:
    # Prepare: 40, 37, 21 samples in chunks of 16 with the remainder -> 3 + 3 + 2 means
    task = make_task()
    reference = FedCFAReferenceParams(k=2, chunk_size=16)
    path = tmp_path / "checkpoint.npz"
    server, clients = build_fedcfa(task, reference)
    grid = InProcessGrid(clients, 0)
    # Execute: an uninterrupted run, and one stopped after round 2 and resumed from its checkpoint
    Federation(server, grid, Schedule(3), seed=0, rounds=3).run()
    _run(task, reference, seed=0, rounds=2, checkpoint=path)
    resumed, _ = _run(task, reference, seed=0, rounds=3, checkpoint=path, resume=True)
    # Assert
    assert server.average["avg_x"].shape == (3 + 3 + 2, 2)
    states = grid.client_states()
    assert sorted(states) == [0, 1, 2]
    assert all(any(name.startswith("momentum/") for name in state.arrays) for state in states.values())
    _assert_same_server(resumed, server)
