"""A tiny hand-made concept world for the F-CMs method tests.

Three concepts and a task with the true DAG ``a -> b -> y`` and ``c -> y``:

- ``a`` in {0, 1}, uniform;
- ``b`` in {0, 1, 2}: ``2 * a`` with probability 0.8, otherwise uniform;
- ``c`` in {0, 1}, uniform;
- ``y`` in {0, 1}: ``(b >= 1) xor c``, flipped with probability 0.1.

The input ``x`` is the one-hot code of ``(a, b, c)`` (7 columns) plus Gaussian
noise, so the concepts are learnable from ``x``; the task is not encoded.
Each client labels a subset of the nodes and states the true DAG restricted to
it as its confidence matrix (oracle beliefs).

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
from fedmosaic.methods.concepts.graph import ConfidenceMatrix
from fedmosaic.methods.concepts.models import ConceptModelParams
from fedmosaic.methods.concepts.params import FCMParams
from fedmosaic.methods.concepts.server import FCMServer
from fedmosaic.methods.concepts.task import ConceptClientData, ConceptTask, LabeledConcepts
from fedmosaic.methods.training import TrainParams

NODES = ("a", "b", "c", "y")
TASK = "y"
CARDINALITIES = {"a": 2, "b": 3, "c": 2, "y": 2}
EDGES = (("a", "b"), ("b", "y"), ("c", "y"))
INPUT_DIM = 7

#: Default concept subsets of clients 0..3: different subsets, client 2 has no task labels.
SUBSETS: tuple[tuple[str, ...], ...] = (("a", "b", "y"), ("b", "c", "y"), ("a", "b"), ("a", "b", "c", "y"))


def _sample(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``(x, values)`` of ``n`` samples; ``values`` columns follow :data:`NODES`."""
    a = rng.integers(0, 2, n)
    b = np.where(rng.random(n) < 0.8, 2 * a, rng.integers(0, 3, n))
    c = rng.integers(0, 2, n)
    y = ((b >= 1) ^ (c == 1)).astype(np.int64)
    y = np.where(rng.random(n) < 0.1, 1 - y, y)
    values = np.stack([a, b, c, y], axis=1).astype(np.int64)
    one_hot = np.concatenate([np.eye(2)[a], np.eye(3)[b], np.eye(2)[c]], axis=1)
    x = (one_hot + 0.3 * rng.standard_normal(one_hot.shape)).astype(np.float32)
    return x, values


def _labeled(x: np.ndarray, values: np.ndarray, names: Sequence[str]) -> LabeledConcepts:
    columns = [NODES.index(n) for n in names]
    return LabeledConcepts(x=x, values=np.ascontiguousarray(values[:, columns]), names=tuple(names))


def client_data(
    concepts: Sequence[str], *, seed: int, n_train: int = 200, n_val: int = 50, edges: Sequence[tuple[str, str]] = EDGES
) -> ConceptClientData:
    """One client labeling ``concepts``, with the DAG ``edges`` restricted to them as beliefs."""
    rng = np.random.default_rng([seed, 17])
    train, val = _sample(n_train, rng), _sample(n_val, rng)
    return ConceptClientData(
        train=_labeled(*train, concepts),
        val=_labeled(*val, concepts),
        confidence=ConfidenceMatrix.from_dag(concepts, edges),
    )


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
