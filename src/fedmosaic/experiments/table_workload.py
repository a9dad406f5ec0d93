"""Workloads from sites' own tables (``[tables]``): horizontal and concept tasks.

In process, the coordinator reads every site's table up front, so that a bad
table is reported before anything is written. With a Flower engine it reads
only its test table: each node reads its own site's table (its ``data-file``
node config, else the experiment's file of its partition in a simulation)
and its graph belief (``graph-file``).

Features are scaled by federated statistics: before the runs, one exchange
collects every site's row count, sums and sums of squares
(:mod:`fedmosaic.preparation.scaling`); the server combines them, and the
clients receive the mean and standard deviation with every message. With
``federation.audit`` the exchange is in the audit (``messages/scaling.jsonl``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from fedmosaic.data.arrays import ArrayDataset
from fedmosaic.data.concept_clients import learned_confidence
from fedmosaic.data.confidence import ConfidenceMatrix
from fedmosaic.data.labels import require_classes
from fedmosaic.data.tables.schema import TablesSection
from fedmosaic.data.tables.sites import ConceptSite, Sites, read_concept_site, read_concept_test, read_labeled
from fedmosaic.errors import ConfigError, FedmosaicError
from fedmosaic.experiments.classification import ClassificationWorkload
from fedmosaic.experiments.config import ExperimentConfig, FederationSection
from fedmosaic.experiments.inprocess_engine import Engine, InProcessEngine, JobSpec
from fedmosaic.experiments.job import Job, federated_schedule
from fedmosaic.experiments.run_encoders import check_own_models, check_run_classifiers
from fedmosaic.experiments.table_vertical import UnalignedTables, align_tables
from fedmosaic.experiments.vertical_workload import VerticalWorkload
from fedmosaic.federation import Federation, Grid, RoundRecord, Schedule, derive_rng
from fedmosaic.federation.audit import MessageRecord
from fedmosaic.federation.message import ConfigValue
from fedmosaic.methods.concepts.task import ConceptClientData, ConceptTask, LabeledConcepts
from fedmosaic.methods.horizontal.models import check_classifier
from fedmosaic.preparation.scaling import MIN_SITE_ROWS, Scaling, ScalingClient, ScalingServer

SCALING = "scaling"
"""Label of the job that collects the sites' feature statistics."""
NODE_FILE = "data-file"
"""Node config key: the node's own table."""
NODE_GRAPH = "graph-file"
"""Node config key: the node's own graph belief."""


@dataclass(frozen=True)
class TableWorkload:
    """Sites' own tables of a horizontal or concept task.

    Parameters
    ----------
    tables : TablesSection
        The shared schema.
    sites : Sites
        Each site's raw data (:class:`ConceptSite` or :class:`ArrayDataset`), read on demand.
    test : ConceptSite or ArrayDataset or None
        The coordinator's raw test table; None on a node.
    scaling : Scaling or None, default None
        The federated feature scaling, once fitted.
    audit : MessageRecord or None, default None
        With ``federation.audit``: the audit of the scaling exchange, written
        to the output folder's ``messages/`` once the run has claimed it.
    """

    tables: TablesSection
    sites: Sites[Any]
    test: ConceptSite | ArrayDataset | None
    scaling: Scaling | None = None
    audit: MessageRecord | None = None
    figures: tuple[tuple[str, str, bytes], ...] = ()
    _clients: dict[int, Sites[Any]] = field(default_factory=dict, init=False, repr=False, compare=False)

    def example_shape(self) -> tuple[int, ...]:
        """The shape of one example: ``(d,)`` for ``d`` feature columns, an ``.npz`` site's ``x`` row otherwise."""
        if self.test is not None:
            return tuple(self.test.x.shape[1:])
        assert self.scaling is not None, "a node knows the shape from the scaling it was sent"
        return tuple(self.scaling.mean.shape)

    def features(self, site: int) -> np.ndarray:
        """Site ``site``'s raw features (what its scaling client summarises)."""
        features: np.ndarray = self.sites[site].x
        return features

    def header(self) -> dict[str, ConfigValue]:
        """What every message of a job carries for the clients: the fitted scaling."""
        return {} if self.scaling is None else dict(self.scaling.to_config())

    def jobs(self, setting: str, config: ExperimentConfig) -> list[Job]:
        """The federations of a run in ``setting`` (features scaled)."""
        if self.scaling is None:
            raise FedmosaicError("the sites' features are not scaled yet (fit_scaling first)")
        return TABLE_KINDS[self.tables.kind].jobs(self, setting, config)

    def _horizontal_jobs(self, setting: str, config: ExperimentConfig) -> list[Job]:
        """A horizontal task's jobs: the sites' scaled arrays as a classification workload's."""
        return self._horizontal(config).jobs(setting, config)

    def _concept_jobs(self, setting: str, config: ExperimentConfig) -> list[Job]:
        """A concept task's jobs: each site's scaled rows, belief and validation share."""
        clients = self._concept_clients(config)
        if setting == "federated":
            schedule = federated_schedule(config.federation, len(clients))
            return [Job("federated", self._concept_task(clients, config), schedule)]
        if setting == "centralized":
            pooled = _pooled(list(clients), self.tables)
            size = int(pooled.train.x.nbytes + pooled.train.values.nbytes)
            return [Job("centralized", self._concept_task([pooled], config), Schedule(num_clients=1), size)]
        return [
            Job(f"client-{k}", self._concept_task([client], config), Schedule(num_clients=1))
            for k, client in enumerate(clients)
        ]

    def _concept_clients(self, config: ExperimentConfig) -> Sites[Any]:
        """Each site's scaled rows and belief, built once for all runs (a learned belief takes seconds)."""
        if config.seed not in self._clients:
            scaling = self.scaling
            self._clients[config.seed] = self.sites.map(lambda k, site: _concept_client(site, scaling, config, k))  # type: ignore[arg-type]
        return self._clients[config.seed]

    def _horizontal(self, config: ExperimentConfig) -> ClassificationWorkload:
        scaling = self.scaling
        assert scaling is not None
        classes = len(self.tables.classes)
        clients = self.sites.map(lambda k, site: ArrayDataset(scaling.apply(site.x), site.y, classes))
        test = self.test
        if test is None:
            scaled = ArrayDataset(np.zeros((0, *self.example_shape()), np.float32), np.zeros(0, np.int64), classes)
        else:
            scaled = ArrayDataset(scaling.apply(test.x), test.y, classes)  # type: ignore[union-attr]
        return ClassificationWorkload(clients=clients, test=scaled)  # type: ignore[arg-type]

    def _concept_task(self, clients: Any, config: ExperimentConfig) -> ConceptTask:
        tables, scaling = self.tables, self.scaling
        assert scaling is not None
        assert tables.task is not None
        names = tuple(tables.concepts)
        if self.test is None:
            test = LabeledConcepts(
                np.zeros((0, len(tables.features)), np.float32), np.zeros((0, len(names)), np.int64), names
            )
        else:
            assert isinstance(self.test, ConceptSite)
            test = LabeledConcepts(scaling.apply(self.test.x), self.test.values, self.test.names)
        return ConceptTask(
            clients=clients,
            test=test,
            task=tables.task,
            cardinalities={name: len(categories) for name, categories in tables.concepts.items()},
            true_ancestors=frozenset(names) - {tables.task},
            train=config.train,
            last_arrival=1,
            rounds=config.federation.rounds,
        )


def _concept_client(site: ConceptSite, scaling: Scaling, config: ExperimentConfig, index: int) -> ConceptClientData:
    """A site's scaled training and validation rows (a seeded share held out) and its belief."""
    tables = config.tables
    assert tables is not None
    order = derive_rng(config.seed, "tables-validation", index).permutation(len(site.x))
    cut = round(tables.val_fraction * len(order))
    val, train = np.sort(order[:cut]), np.sort(order[cut:])
    x = scaling.apply(site.x)
    belief = site.belief
    if belief is None:
        complete = train[(site.values[train] >= 0).all(axis=1)]
        if len(complete) < 2:
            raise ConfigError(
                f"tables.sites.{index}.graph",
                "the site labels no two training rows for all its concepts: give it a graph belief file",
            )
        names, values = learned_confidence(
            site.values[complete], site.names, derive_rng(config.seed, "confidence", index)
        )
        belief = ConfidenceMatrix(tuple(names), values)
    return ConceptClientData(
        train=LabeledConcepts(x[train], site.values[train], site.names),
        val=LabeledConcepts(x[val], site.values[val], site.names),
        confidence=belief,
    )


def _pooled(clients: list[ConceptClientData], tables: TablesSection) -> ConceptClientData:
    """All sites' rows at one site, each concept unlabeled (-1) where its site does not label it.

    Its graph belief is the sites' beliefs averaged pair by pair, weighted by
    their training rows, over the sites that label both concepts (the vote
    the server's fusion takes).
    """
    names = tuple(n for n in tables.concepts if any(n in c.train.names for c in clients))
    position = {n: i for i, n in enumerate(names)}
    total, weight = np.zeros((len(names), len(names))), np.zeros((len(names), len(names)))
    for client in clients:
        idx = [position[n] for n in client.confidence.names]
        total[np.ix_(idx, idx)] += len(client.train) * client.confidence.values
        weight[np.ix_(idx, idx)] += len(client.train)

    def stacked(part: str) -> LabeledConcepts:
        sets = [getattr(c, part) for c in clients]
        return LabeledConcepts(
            np.concatenate([s.x for s in sets]), np.concatenate([s.aligned(names) for s in sets]), names
        )

    belief = np.divide(total, weight, out=np.zeros_like(total), where=weight > 0)
    return ConceptClientData(train=stacked("train"), val=stacked("val"), confidence=ConfidenceMatrix(names, belief))


def prepare_tables(config: ExperimentConfig) -> TableWorkload:
    """The coordinator's workload: the test table, and in process every site's table (checked now)."""
    tables = config.tables
    assert tables is not None
    assert tables.test is not None
    test = TABLE_KINDS[tables.kind].read_test(config)
    in_process = config.federation.engine == "inprocess"
    sites = _sites(tables, None if in_process else frozenset(), {})
    if in_process:
        for k, site in enumerate(sites):
            if site.x.shape[1:] != test.x.shape[1:]:
                raise ConfigError(
                    f"tables.sites.{k}.file",
                    f"{Path(tables.sites[k].file).name}: rows of shape {site.x.shape[1:]}, "
                    f"the test file's are {test.x.shape[1:]}",
                )
            if len(site.x) < MIN_SITE_ROWS:
                raise ConfigError(
                    f"tables.sites.{k}.file",
                    f"{len(site.x)} rows; a site needs at least {MIN_SITE_ROWS}, so that the feature statistics"
                    " it sends never describe a handful of rows",
                )
        _require_task_classes(tables, list(sites))
    return TableWorkload(tables, sites, test)


def _require_task_classes(tables: TablesSection, sites: list[Any]) -> None:
    """Refuse sites whose labeled rows, pooled, hold one class of the task (a horizontal label or the task concept)."""
    if tables.kind == "horizontal":
        require_classes(np.concatenate([site.y for site in sites]), tables.classes, "tables.sites", "the sites' labels")
        return
    assert tables.task is not None
    labels = [site.values[:, site.names.index(tables.task)] for site in sites if tables.task in site.names]
    require_classes(
        np.concatenate(labels) if labels else np.zeros(0, np.int64),
        tables.concepts[tables.task],
        "tables.sites",
        f"the sites' labels of the task {tables.task!r}",
    )


def node_workload(
    config: ExperimentConfig, site: int, node_config: Mapping[str, Any], header: Mapping[str, Any]
) -> TableWorkload:
    """A node's workload: only its own site's table (its node config's files), and the scaling it was sent."""
    files = {key: str(node_config[key]) for key in (NODE_FILE, NODE_GRAPH) if node_config.get(key)}
    scaling = Scaling.from_config(dict(header))
    workload = _node_workload(config.model_dump_json(), site, tuple(sorted(files.items())))
    return replace(workload, scaling=scaling)


@lru_cache(maxsize=4)
def _node_workload(document: str, site: int, files: tuple[tuple[str, str], ...]) -> TableWorkload:
    config = ExperimentConfig.model_validate_json(document)
    assert config.tables is not None
    return TableWorkload(config.tables, _sites(config.tables, frozenset({site}), dict(files)), None)


def _sites(tables: TablesSection, available: frozenset[int] | None, files: dict[str, str]) -> Sites[Any]:
    read_site = TABLE_KINDS[tables.kind].read_site
    return Sites(len(tables.sites), lambda k: read_site(tables, k, files), available)


def _labeled_test(config: ExperimentConfig) -> ArrayDataset:
    """A horizontal task's test table (every row labeled), once the model is known to fit its shape and classes."""
    tables = config.tables
    assert tables is not None
    assert tables.test is not None
    test = read_labeled(tables, tables.test, "tables.test", complete=True)
    check_run_classifiers(config, check_classifier(config.model, tuple(test.x.shape[1:]), len(tables.classes)))
    return test


def _labeled_site(tables: TablesSection, site: int, files: dict[str, str]) -> ArrayDataset:
    """A horizontal site's table or ``.npz`` (a node's own file where its node config names one)."""
    return read_labeled(tables, files.get(NODE_FILE) or tables.sites[site].file, f"tables.sites.{site}.file")


def _concept_test(config: ExperimentConfig) -> ConceptSite:
    """A concept task's test table, once the runs' own encoders are known to build on its features."""
    tables = config.tables
    assert tables is not None
    assert tables.task is not None  # a concept task's (check_tables)
    x, values, names = read_concept_test(tables)
    check_own_models(config, [x.shape[1:]], len(tables.concepts[tables.task]))
    return ConceptSite(x, values, names, None)


def _concept_site(tables: TablesSection, site: int, files: dict[str, str]) -> ConceptSite:
    """A concept site's table and graph belief (a node's own files where its node config names them)."""
    return read_concept_site(tables, site, files.get(NODE_FILE), files.get(NODE_GRAPH))


@dataclass(frozen=True)
class TableKind:
    """How a kind of ``[tables]`` task reads its files and makes its jobs."""

    read_test: Callable[[ExperimentConfig], Any]
    read_site: Callable[[TablesSection, int, dict[str, str]], Any]
    jobs: Callable[[TableWorkload, str, ExperimentConfig], list[Job]]


TABLE_KINDS: dict[str, TableKind] = {
    "horizontal": TableKind(_labeled_test, _labeled_site, TableWorkload._horizontal_jobs),
    "concepts": TableKind(_concept_test, _concept_site, TableWorkload._concept_jobs),
}
"""``tables.kind`` -> how its sites' files are read and its jobs made (vertical tables: ``table_vertical``)."""


def fit_scaling(
    workload: TableWorkload, config: ExperimentConfig, engine: Engine | None, document: dict[str, Any]
) -> TableWorkload:
    """Run the scaling exchange over the experiment's engine and return the workload with its scaling.

    Raises
    ------
    FedmosaicError
        If not every site replied.
    """
    sites = len(workload.sites)
    server = ScalingServer(workload.example_shape())
    schedule = Schedule(num_clients=sites, min_replies=sites)

    audit = MessageRecord(SCALING) if config.federation.audit else None

    def federate(grid: Grid) -> list[RoundRecord]:
        return Federation(server, grid, schedule, seed=config.seed, rounds=1, observer=audit).run()

    spec = JobSpec(
        document=document,
        run=0,
        label=SCALING,
        schedule=schedule,
        seed=config.seed,
        client_factory=lambda k: ScalingClient(workload.features(k)),
        reply_timeout_s=config.federation.reply_timeout_s,
    )
    (engine or InProcessEngine(FederationSection(workers=1))).run_job(spec, federate)
    if server.scaling is None:
        raise FedmosaicError("feature scaling needs the statistics of every site; some did not reply")
    return replace(workload, scaling=server.scaling, audit=audit)


def prepare_tables_run(workload: Any, config: ExperimentConfig, engine: Engine | None, document: dict[str, Any]) -> Any:
    """Before the runs: the federated scaling of horizontal and concept tables, the row alignment of vertical ones.

    Other workloads are returned unchanged.
    """
    if isinstance(workload, TableWorkload) and workload.scaling is None:
        return fit_scaling(workload, config, engine, document)
    if isinstance(workload, UnalignedTables):
        return align_tables(workload, config, engine, workload.audit)
    return workload


def job_header(workload: Any) -> dict[str, ConfigValue]:
    """Header entries the clients of ``workload``'s jobs need (the scaling or test rows of table workloads)."""
    return workload.header() if isinstance(workload, TableWorkload | VerticalWorkload) else {}
