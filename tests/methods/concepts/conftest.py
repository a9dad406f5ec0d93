"""The tiny hand-made concept world (:mod:`fedmosaic.testing.tiny_worlds`) as fixtures for the F-CMs method tests.

The factories are fixtures (the tests run with ``--import-mode=importlib``,
where a conftest cannot be imported as a module).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np
import pytest

from fedmosaic.federation import Federation, InProcessGrid, RoundRecord, Schedule
from fedmosaic.methods.concepts.client import FCMClient
from fedmosaic.methods.concepts.models import ConceptModelParams
from fedmosaic.methods.concepts.params import FCMParams
from fedmosaic.methods.concepts.server import FCMServer
from fedmosaic.methods.concepts.task import ConceptClientData, ConceptTask
from fedmosaic.methods.train_params import TrainParams
from fedmosaic.testing.tiny_worlds import CARDINALITIES, EDGES, INPUT_DIM, NODES, TASK, client_data
from fedmosaic.testing.tiny_worlds import labeled as _labeled
from fedmosaic.testing.tiny_worlds import sample_concepts as _sample

__all__ = ["CARDINALITIES", "EDGES", "INPUT_DIM", "NODES", "TASK", "_labeled", "_sample", "client_data"]

#: Default concept subsets of clients 0..3: different subsets, client 2 has no task labels.
SUBSETS: tuple[tuple[str, ...], ...] = (("a", "b", "y"), ("b", "c", "y"), ("a", "b"), ("a", "b", "c", "y"))


@pytest.fixture
def make_client_data() -> Callable[..., ConceptClientData]:
    """Factory of one client's data: ``make_client_data(concepts, seed=..., n_train=..., edges=...)``."""
    return client_data


@pytest.fixture
def make_task() -> Callable[..., ConceptTask]:
    """Factory of a :class:`ConceptTask` over the tiny world.

    ``make_task(subsets=SUBSETS, clients=None, rounds=1, last_arrival=1, n_train=200, n_test=300)``;
    ``clients`` (a list of ConceptClientData) overrides ``subsets``.
    """

    def make(
        subsets: Sequence[Sequence[str]] = SUBSETS,
        *,
        clients: list[ConceptClientData] | None = None,
        rounds: int = 1,
        last_arrival: int = 1,
        n_train: int = 200,
        n_test: int = 300,
        epochs: int = 1,
    ) -> ConceptTask:
        if clients is None:
            clients = [client_data(s, seed=k, n_train=n_train) for k, s in enumerate(subsets)]
        test_x, test_values = _sample(n_test, np.random.default_rng([999, 17]))
        return ConceptTask(
            clients=clients,
            test=_labeled(test_x, test_values, NODES),
            task=TASK,
            cardinalities=dict(CARDINALITIES),
            true_ancestors=frozenset({"a", "b", "c"}),
            train=TrainParams(optimizer="adam", lr=0.01, batch_size=64, epochs=epochs),
            last_arrival=last_arrival,
            rounds=rounds,
        )

    return make


def fcm_params(family: str = "cbm", **overrides: object) -> FCMParams:
    """F-CMs parameters with a tiny model of ``family``."""
    model = ConceptModelParams(family=family, encoder_hidden=16, embedding_size=4, decoder_hidden=8)  # type: ignore[arg-type]
    return FCMParams.model_validate({"model": model, **overrides})


@pytest.fixture
def make_params() -> Callable[..., FCMParams]:
    """Factory of F-CMs parameters: ``make_params(family, **overrides)`` (tiny model)."""
    return fcm_params


@pytest.fixture
def make_client() -> Callable[..., FCMClient]:
    """Factory of the client logic of client ``k`` of a task: ``make_client(task, k, params)``."""

    def make(task: ConceptTask, k: int, params: FCMParams) -> FCMClient:
        return FCMClient(task.clients[k], params, task.train, task.cardinalities)

    return make


@pytest.fixture
def run_federation() -> Callable[..., tuple[FCMServer, list[RoundRecord]]]:
    """Run F-CMs on the in-process engine; returns the server and the history.

    ``run_federation(task, params, rounds=..., joins={client: round}, seed=0,
    checkpoint=None, resume=False, clients_per_round=None)``.
    """

    def run(
        task: ConceptTask,
        params: FCMParams,
        *,
        rounds: int,
        joins: Mapping[int, int] | None = None,
        seed: int = 0,
        checkpoint: Path | None = None,
        resume: bool = False,
        clients_per_round: int | None = None,
    ) -> tuple[FCMServer, list[RoundRecord]]:
        server = FCMServer(task, params)
        grid = InProcessGrid(lambda k: FCMClient(task.clients[k], params, task.train, task.cardinalities), seed)
        schedule = Schedule(num_clients=len(task.clients), joins=dict(joins or {}), clients_per_round=clients_per_round)
        federation = Federation(
            server, grid, schedule, seed=seed, rounds=rounds, checkpoint=checkpoint, fingerprint="t"
        )
        return server, federation.run(resume=resume)

    return run
