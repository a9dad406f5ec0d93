"""Prepare an experiment's data and turn each run into the federations it needs.

The workload is chosen by lookup, never by branching on a kind: a ``[tables]``
experiment by its tables' kind (:data:`TABLE_WORKLOADS`), any other by its
dataset in :data:`~fedmosaic.experiments.datasets.DATASETS` and the kind of
task the experiment asks of it. The preparers of fedmosaic's own datasets
are here: *classification* (a dataset partitioned across clients; FedAvg,
FedProx), Simpson-MNIST, and *concepts* (bnlearn concept data, or the shapes'
images and concepts, laid out over clients with concept subsets and arrival
rounds; F-CMs). Each workload
gives, for a setting (federated, centralized, local), the jobs to run: a
task object the method is built from, and a schedule.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from fedmosaic.data.bayesnet import (
    NOISE_SHARE,
    REFERENCE_NOISE_SHARE,
    ConceptDataset,
    ConceptSplits,
    sample_concept_splits,
)
from fedmosaic.data.concept_clients import (
    ConceptClient,
    ancestral_graph,
    assign_clients,
    concept_subsets,
    corrupted_clients,
    cover_every_node,
    learned_confidence,
    oracle_confidence,
)
from fedmosaic.data.confidence import ConfidenceMatrix
from fedmosaic.data.labels import require_classes
from fedmosaic.data.partition import partition
from fedmosaic.data.shapes import shape_splits
from fedmosaic.data.simpson import simpson_mnist
from fedmosaic.data.simpson_figure import sample_grid_png
from fedmosaic.errors import ConfigError
from fedmosaic.experiments.classification import ClassificationWorkload
from fedmosaic.experiments.config import ExperimentConfig
from fedmosaic.experiments.datasets import Preparer, get_dataset, load_splits
from fedmosaic.experiments.job import Job, federated_schedule
from fedmosaic.experiments.run_encoders import check_own_models
from fedmosaic.experiments.table_vertical import ALIGNMENT, read_tables
from fedmosaic.experiments.table_workload import prepare_tables
from fedmosaic.federation import Schedule, derive_rng
from fedmosaic.federation.audit import MessageRecord
from fedmosaic.methods.concepts.task import ConceptClientData, ConceptTask, LabeledConcepts
from fedmosaic.methods.horizontal.probes import ColourSwapProbe, HeldOutProbe, Probe

FEW_ADDITIONAL_SUBSETS = ("asia", "hailfinder")
"""Networks whose additional concepts appear in 1 extra subgraph; the others use 3."""


@dataclass(frozen=True)
class ConceptWorkload:
    """Concept data of a network laid out over clients."""

    splits: ConceptSplits
    layout: list[ConceptClient]
    clients: list[ConceptClientData]
    true_ancestors: frozenset[str]
    figures: tuple[tuple[str, str, bytes], ...] = ()

    def jobs(self, setting: str, config: ExperimentConfig) -> list[Job]:
        """The federations that make up a run in ``setting``."""
        if setting == "federated":
            joins = {c.client_id: c.joins_at for c in self.layout if c.joins_at > 1}
            schedule = federated_schedule(config.federation, len(self.clients), joins)
            last = max((c.joins_at for c in self.layout), default=1)
            return [Job("federated", self._task(self.clients, config, last), schedule)]
        if setting == "centralized":
            names = self.union_concepts()
            everything = ConceptClientData(
                train=_labeled(self.splits.train, np.arange(len(self.splits.train)), names),
                val=_labeled(self.splits.val, np.arange(len(self.splits.val)), names),
                confidence=ConfidenceMatrix.from_dag(names, self.splits.graph_edges),
            )
            pooled = int(self.splits.train.x.nbytes + self.splits.train.concepts.nbytes)
            return [Job("centralized", self._task([everything], config, 1), Schedule(num_clients=1), pooled)]
        return [
            Job(f"client-{k}", self._task([client], config, 1), Schedule(num_clients=1))
            for k, client in enumerate(self.clients)
        ]

    def union_concepts(self) -> tuple[str, ...]:
        """The concepts some client labels, and the task, in the network's column order.

        The centralized baseline labels exactly these, the concept set
        F-CMs ends with, so that it is the federation's fair equal.
        """
        labeled = {name for client in self.clients for name in client.train.names} | {self.splits.task}
        return tuple(name for name in self.splits.train.names if name in labeled)

    def _task(self, clients: list[ConceptClientData], config: ExperimentConfig, last_arrival: int) -> ConceptTask:
        test = self.splits.test
        return ConceptTask(
            clients=clients,
            test=LabeledConcepts(test.x, test.concepts, test.names),
            task=self.splits.task,
            cardinalities=dict(test.cardinalities),
            true_ancestors=self.true_ancestors,
            train=config.train,
            last_arrival=last_arrival,
            rounds=config.federation.rounds,
            extras={
                "bayes_optimal_accuracy": self.splits.bayes_optimal_accuracy,
                "probe_accuracy": self.splits.probe_accuracy,
                "input_latent_std": self.splits.latent_std,
            },
            true_edges=self.splits.graph_edges,
        )


def prepare_workload(config: ExperimentConfig, *, data_dir: str | Path | None = None) -> Any:
    """Load and lay out the experiment's data (before anything is written)."""
    if config.tables is not None:
        prepare = TABLE_WORKLOADS[config.tables.kind]
    else:
        prepare = get_dataset(config.data.dataset).preparer(config.task_kind)
    return prepare(config, data_dir=data_dir)


def _vertical_tables(config: ExperimentConfig, *, data_dir: str | Path | None = None) -> Any:
    """The active party's tables (and in process every party's), with the alignment's audit when asked."""
    audit = MessageRecord(ALIGNMENT) if config.federation.audit else None
    return replace(read_tables(config, in_process=config.federation.engine == "inprocess"), audit=audit)


def _site_tables(config: ExperimentConfig, *, data_dir: str | Path | None = None) -> Any:
    """Every site's horizontal or concept table, read and checked (the test table too)."""
    return prepare_tables(config)


TABLE_WORKLOADS: dict[str, Preparer] = {
    "horizontal": _site_tables,
    "concepts": _site_tables,
    "vertical": _vertical_tables,
}
"""``tables.kind`` -> how a ``[tables]`` experiment's workload is prepared."""


def prepare_classification(config: ExperimentConfig, *, data_dir: str | Path | None = None) -> ClassificationWorkload:
    """Load the dataset and partition its training split across clients."""
    splits = load_splits(config, data_dir)
    names = [str(k) for k in range(splits.train.num_classes)]
    require_classes(splits.train.y, names, "data.dataset", f"{config.data.dataset}'s training labels")
    p = config.partition
    if p.num_clients > len(splits.train):
        raise ConfigError(
            "partition.num_clients",
            f"more clients ({p.num_clients}) than training samples ({len(splits.train)})",
        )
    parts = partition(
        splits.train.y,
        scheme=p.scheme,
        num_clients=p.num_clients,
        rng=derive_rng(config.seed, "partition"),
        alpha=p.alpha,
        classes_per_client=p.classes_per_client,
        min_size=p.min_size,
    )
    return ClassificationWorkload(clients=splits.train.partitioned(parts), test=splits.test).checked(config)


def prepare_simpson(config: ExperimentConfig, *, data_dir: str | Path | None = None) -> ClassificationWorkload:
    """Simpson-MNIST: a colour rule per client, the pooled trend reversed; colour reliance probed every evaluation."""
    mnist = load_splits(config, data_dir, "mnist")
    splits = simpson_mnist(
        mnist,
        seed=config.seed,
        num_clients=config.partition.num_clients,
        samples_per_client=config.data.samples_per_client,
        design=config.data.simpson_design,
        test_colours=config.data.test_colours,
        pretrain_samples=config.data.pretrain_samples,
        validation_samples=config.data.validation_samples,
        resolution=config.data.resolution,
    )
    evaluate_on = config.data.evaluate_on
    if evaluate_on != "test" and not len(splits.validation):
        raise ConfigError("data.validation_samples", "must be > 0 to evaluate on the validation set (data.evaluate_on)")
    on_validation = evaluate_on == "validation"
    test, swap = (splits.validation, splits.validation_swap) if on_validation else (splits.test, splits.colour_swap)
    probes: tuple[Probe, ...] = (ColourSwapProbe(swap.own, swap.swapped),)
    if evaluate_on == "both":
        validation_swap = ColourSwapProbe(splits.validation_swap.own, splits.validation_swap.swapped)
        probes += (HeldOutProbe("validation_", splits.validation, validation_swap),)
    picture = (
        "simpson_samples",
        "samples of each client (rows), with the digit and its shade",
        sample_grid_png(splits),
    )
    return ClassificationWorkload(
        clients=splits.clients,
        test=test,
        pretrain=splits.pretrain if len(splits.pretrain) else None,
        figures=(picture,),
        probes=probes,
    ).checked(config)


def prepare_concepts(config: ExperimentConfig, *, data_dir: str | Path | None = None) -> ConceptWorkload:
    """Sample a network's concept data and lay it out over clients."""
    data = config.data
    splits = sample_concept_splits(
        data.network,
        seed=config.seed,
        task=data.task,
        n_samples=data.samples,
        latent_dim=data.latent_dim,
        noise_share=_noise_share(data.noise_share, data.inputs),
        mode=data.inputs,
        leak_task=data.leak_task,
    )
    few = data.network in FEW_ADDITIONAL_SUBSETS
    return _lay_out(config, splits, additional_subsets=1 if few else 3, join_round=10 if data.network == "asia" else 20)


def prepare_shapes(config: ExperimentConfig, *, data_dir: str | Path | None = None) -> ConceptWorkload:
    """Draw the shapes' images and concepts and lay them out over clients (as asia's: one additional subset)."""
    splits = shape_splits(seed=config.seed, n_samples=config.data.samples)
    return _lay_out(config, splits, additional_subsets=1, join_round=10)


def _lay_out(
    config: ExperimentConfig, splits: ConceptSplits, *, additional_subsets: int, join_round: int
) -> ConceptWorkload:
    """Lay concept splits out over ``[concepts]``' clients: concept subsets, arrivals, confidence matrices.

    ``additional_subsets`` subsets hold the concepts that arrive late, at
    ``concepts.join_round`` (default ``join_round``).
    """
    layout_config = config.concepts
    if layout_config.num_clients > len(splits.train):
        raise ConfigError(
            "concepts.num_clients",
            f"more clients ({layout_config.num_clients}) than training samples ({len(splits.train)})",
        )
    rng = derive_rng(config.seed, "concept-layout")
    subsets = concept_subsets(splits.graph_edges, splits.task, rng, additional_subsets=additional_subsets)
    if layout_config.cover == "all":
        subsets = cover_every_node(subsets, splits.train.names, derive_rng(config.seed, "concept-cover"))
    layout = assign_clients(
        subsets,
        len(splits.train),
        len(splits.val),
        rng,
        num_clients=layout_config.num_clients,
        initial=layout_config.initial_clients,
        join_round=layout_config.join_round or join_round,
    )
    corrupted = set(corrupted_clients(layout_config.num_clients, rng, layout_config.corrupt_clients))
    clients = [
        ConceptClientData(
            train=_labeled(splits.train, client.train_rows, client.concepts),
            val=_labeled(splits.val, client.val_rows, client.concepts),
            confidence=_confidence(config, splits, client, client.client_id in corrupted),
        )
        for client in layout
    ]
    ancestors, _ = ancestral_graph(splits.graph_edges, splits.task)
    check_own_models(config, [splits.train.x.shape[1:]], splits.train.cardinalities[splits.task])
    return ConceptWorkload(
        splits=splits, layout=layout, clients=clients, true_ancestors=frozenset(ancestors) - {splits.task}
    )


def _noise_share(given: float | None, inputs: str) -> float:
    """The noise share of ``x``: the one given, else the default of the input mode."""
    if given is not None:
        return given
    return NOISE_SHARE if inputs == "concepts" else REFERENCE_NOISE_SHARE


def _labeled(dataset: ConceptDataset, rows: np.ndarray, names: tuple[str, ...]) -> LabeledConcepts:
    return LabeledConcepts(x=dataset.x[rows], values=dataset.columns(names)[rows], names=tuple(names))


def _confidence(
    config: ExperimentConfig, splits: ConceptSplits, client: ConceptClient, corrupt: bool
) -> ConfidenceMatrix:
    rng = derive_rng(config.seed, "confidence", client.client_id)
    if config.concepts.confidence == "oracle":
        names, values = oracle_confidence(
            splits.graph_edges, client.concepts, rng, corrupt=corrupt, fraction=config.concepts.corrupt_pairs
        )
    else:
        names, values = learned_confidence(
            splits.train.columns(client.concepts)[client.train_rows], client.concepts, rng
        )
    return ConfidenceMatrix(tuple(names), values)
