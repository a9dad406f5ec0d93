"""A tiny task of every kind a method is built from, for the method contract (:mod:`fedmosaic.testing.contract`).

Each task has two or three clients (passive parties for vertical tasks) and
a few dozen rows, so that one round of any method takes a fraction of a second.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from fedmosaic.data.arrays import ArrayDataset
from fedmosaic.methods.base import Method, MethodParams
from fedmosaic.methods.concepts.task import ConceptClientData, ConceptTask, LabeledConcepts
from fedmosaic.methods.horizontal.models import ModelParams
from fedmosaic.methods.horizontal.task import HorizontalTask
from fedmosaic.methods.train_params import TrainParams
from fedmosaic.methods.vertical.task import VerticalTask
from fedmosaic.testing.tiny_worlds import (
    CARDINALITIES,
    NODES,
    TASK,
    client_data,
    labeled,
    sample_concepts,
    tiny_vertical_data,
)

SMALL: dict[str, Any] = {
    "hidden": 8,
    "latent": 4,
    "top_latent": 2,
    "embedding": 4,
    "batch_size": 16,
    "kappa": 2,
    "predict_samples": 2,
    "classifier_passes": 1,
    "stage1_rounds": 1,
    "pretrain_rounds": 1,
    "chunk_size": 8,
}
"""Small values of method parameters, by name: a method takes those of its parameters it has, defaults otherwise.

Pre-training stages last one round, so that a run of three rounds crosses into the next stage.
"""
SMALL_MODEL: dict[str, dict[str, Any]] = {
    "concepts": {"family": "cbm", "encoder_hidden": 8, "embedding_size": 2, "decoder_hidden": 4},
}
"""A small ``model`` of the methods of each kind that describe theirs in ``params.model`` (F-CMs' concept model)."""


DATA: dict[str, dict[str, Any]] = {
    "classification": {"data": {"dataset": "digits"}},
    "concepts": {"data": {"dataset": "bnlearn", "network": "asia"}},
    "vertical": {"data": {"dataset": "digits"}, "vertical": {}},
}
"""The least an experiment of each kind of task needs."""


def minimal_source(method: Method, *, params: dict[str, Any] | None = None, **sections: Any) -> dict[str, Any]:
    """The smallest raw configuration running ``method`` (with ``params``), plus ``sections``."""
    run = {"name": "a", "method": method.name, "params": params or {}}
    return {"name": "t", **DATA[method.kind], "runs": [run], **sections}


def tiny_params(method: Method) -> MethodParams:
    """``method``'s parameters: its defaults, with :data:`SMALL`'s value for every key it has."""
    fields = method.params.model_fields
    small = {key: value for key, value in SMALL.items() if key in fields}
    if "model" in fields and method.kind in SMALL_MODEL:
        small["model"] = SMALL_MODEL[method.kind]
    return method.params.model_validate(small)


VARIANTS: dict[str, tuple[str, ...]] = {
    "classification": ("horizontal",),
    "concepts": ("concepts", "concept-tables"),
    "vertical": ("vertical",),
}
"""The tiny tasks of each kind. Sites' own tables give the same task types; concept tables add
unlabeled cells (-1), which the data sampled from a network never has."""


def tiny_task(variant: str, rounds: int) -> tuple[Any, int]:
    """The task ``variant`` (one of :data:`VARIANTS`) for a federation of ``rounds`` rounds, and its clients."""
    builders: dict[str, Callable[[int], Any]] = {
        "horizontal": _horizontal,
        "concepts": _concepts,
        "concept-tables": _concept_tables,
        "vertical": _vertical,
    }
    task = builders[variant](rounds)
    clients = task.data.num_parties - 1 if variant == "vertical" else len(task.clients)
    return task, clients


def _horizontal(rounds: int) -> HorizontalTask:
    """Three Gaussian classes in 6 dimensions; 24 training rows per client, 30 test rows."""
    rng = np.random.default_rng(0)

    def sample(n: int) -> ArrayDataset:
        y = rng.integers(0, 3, n)
        x = (rng.normal(size=(n, 6)) + 1.5 * np.eye(3, 6)[y]).astype(np.float32)
        return ArrayDataset(x, y.astype(np.int64), num_classes=3)

    clients = [sample(24) for _ in range(3)]
    train = TrainParams(batch_size=8, lr=0.1)
    return HorizontalTask(clients, sample(30), ModelParams(hidden=[8]), train)


def _concepts(rounds: int) -> ConceptTask:
    """The tiny concept world of the F-CMs tests: clients labeling different concept subsets."""
    subsets = (("a", "b", "y"), ("b", "c", "y"), ("a", "b", "c", "y"))
    clients = [client_data(s, seed=k, n_train=40, n_val=16) for k, s in enumerate(subsets)]
    test_x, test_values = sample_concepts(60, np.random.default_rng([999, 17]))
    return ConceptTask(
        clients=clients,
        test=labeled(test_x, test_values, NODES),
        task=TASK,
        cardinalities=dict(CARDINALITIES),
        true_ancestors=frozenset({"a", "b", "c"}),
        train=TrainParams(optimizer="adam", lr=0.01, batch_size=32),
        rounds=rounds,
    )


def _concept_tables(rounds: int) -> ConceptTask:
    """The tiny concept world as sites' tables: a quarter of the training and validation cells left empty (-1)."""
    task = _concepts(rounds)
    rng = np.random.default_rng(5)

    def emptied(data: LabeledConcepts) -> LabeledConcepts:
        values = np.where(rng.random(data.values.shape) < 0.25, -1, data.values)
        return LabeledConcepts(data.x, values, data.names)

    clients = [ConceptClientData(emptied(c.train), emptied(c.val), c.confidence) for c in task.clients]
    return replace(task, clients=clients)


def _vertical(rounds: int) -> VerticalTask:
    """Three parties (the active one and two passive ones) over 60 training and 30 test rows."""
    return VerticalTask(tiny_vertical_data(), rounds)
