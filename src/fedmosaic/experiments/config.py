"""The experiment configuration: the whole schema and its loading.

An experiment is a TOML file (or a preset shipped with the package). Every
section is validated at the boundary; the first problem is reported on one
line naming the field and what is accepted. ``docs/experiments.md`` documents
every key; ``tests/experiments/test_config.py`` keeps it in sync.

This module is the public face: the sections themselves live in
:mod:`~fedmosaic.experiments.sections`, reading TOML, ``--set`` overrides and
grid expansion in :mod:`~fedmosaic.experiments.overrides`; here they are
assembled (:class:`ExperimentConfig`) and checked across sections
(:func:`load_config`).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic import Field

from fedmosaic.data.tables.schema import TablesSection, check_tables
from fedmosaic.device_names import check_device_name
from fedmosaic.errors import ConfigError
from fedmosaic.experiments.capabilities import UPDATE_ATTACKS, check_supported
from fedmosaic.experiments.datasets import DATASETS, get_dataset
from fedmosaic.experiments.inert_keys import check_inert_keys, recorded_document
from fedmosaic.experiments.overrides import apply_overrides, grid_points, read_toml
from fedmosaic.experiments.sections import (
    VERTICAL_DATASETS,
    VERTICAL_IMAGE_DATASETS,
    AggregationSection,
    AttackSection,
    ClientsAtRound,
    ConceptsSection,
    DataSection,
    FederationSection,
    GridSection,
    PartitionSection,
    PrivacySection,
    RunSection,
    Section,
    VerticalSection,
)
from fedmosaic.experiments.user_models import with_model_code
from fedmosaic.experiments.validation import validate
from fedmosaic.limits import MAX_SEED, MIN_NOISE
from fedmosaic.methods.base import MethodParams
from fedmosaic.methods.horizontal.models import ModelParams
from fedmosaic.methods.registry import get_method
from fedmosaic.methods.train_params import TrainParams

__all__ = [
    "VERTICAL_DATASETS",
    "VERTICAL_IMAGE_DATASETS",
    "AggregationSection",
    "AttackSection",
    "ClientsAtRound",
    "ConceptsSection",
    "DataSection",
    "ExperimentConfig",
    "FederationSection",
    "GridSection",
    "PartitionSection",
    "PrivacySection",
    "RunSection",
    "Section",
    "VerticalSection",
    "apply_overrides",
    "fingerprint",
    "grid_points",
    "load_config",
    "method_params",
    "read_toml",
    "result_fingerprint",
    "sample_rate",
]


class ExperimentConfig(Section):
    """A whole experiment.

    Parameters
    ----------
    name : str
        Experiment name (default output folder ``runs/<name>``): a plain name, without ``/``, backslash or
        control characters, and neither ``.`` nor ``..``.
    description : str, default ""
        One line shown by ``fedmosaic presets`` and in reports.
    seed : int, default 0
        Every random draw derives from it (0 to 2**32 - 1).
    data : table
        The dataset (``[data]``).
    partition : table
        How training data is split across clients (``[partition]``).
    concepts : table
        How concept-labeled clients are laid out (``[concepts]``).
    vertical : table or None, default None
        Makes the experiment a vertical task (``[vertical]``).
    federation : table
        How rounds run (``[federation]``).
    model : table
        The model architecture (``[model]``).
    train : table
        Local training hyper-parameters (``[train]``).
    runs : array of tables
        The methods to run and compare (``[[runs]]``), at least one.
    grid : table or None, default None
        Makes the experiment a grid of experiments (``[grid]``).
    aggregation : table
        How replies are combined (``[aggregation]``).
    privacy : table
        Client-level differential privacy (``[privacy]``).
    attack : table
        Simulated hostile clients (``[attack]``).
    tables : table or None, default None
        Sites' own tables and their shared schema (``[tables]``); replaces
        ``[data]``, ``[partition]`` and ``[concepts]``.
    """

    name: str = Field(min_length=1)
    description: str = ""
    seed: int = Field(default=0, ge=0, le=MAX_SEED)
    data: DataSection = Field(default_factory=DataSection)
    partition: PartitionSection = Field(default_factory=PartitionSection)
    federation: FederationSection = Field(default_factory=FederationSection)
    concepts: ConceptsSection = Field(default_factory=ConceptsSection)
    vertical: VerticalSection | None = None
    model: ModelParams = Field(default_factory=ModelParams)
    train: TrainParams = Field(default_factory=TrainParams)
    runs: list[RunSection] = Field(min_length=1)
    grid: GridSection | None = None
    aggregation: AggregationSection = Field(default_factory=AggregationSection)
    privacy: PrivacySection = Field(default_factory=PrivacySection)
    attack: AttackSection = Field(default_factory=AttackSection)
    tables: TablesSection | None = None

    @property
    def num_clients(self) -> int:
        """Number of clients.

        ``concepts.num_clients`` for concept data, passive parties for vertical
        tasks, else ``partition.num_clients``; with ``[tables]``, its sites or
        passive parties.
        """
        if self.tables is not None:
            return self.tables.num_clients
        if self.task_kind == "concepts":
            return self.concepts.num_clients
        if self.vertical is not None:
            return self.vertical.parties(self.data.dataset) - 1
        return self.partition.num_clients

    @property
    def task_kind(self) -> str:
        """The kind of task: ``"concepts"``, ``"vertical"`` or ``"classification"``.

        The kind of task the dataset gives (``"concepts"`` for concept data),
        and for a dataset of classification arrays ``"vertical"`` with a
        ``[vertical]`` section (with ``[tables]``: its kind).

        Raises
        ------
        ConfigError
            If ``data.dataset`` is not registered.
        """
        if self.tables is not None:
            return self.tables.task_kind
        kind = get_dataset(self.data.dataset).kind
        return "vertical" if self.vertical is not None and kind == "classification" else kind

    def document(self) -> dict[str, Any]:
        """The configuration as a run records it (``config.toml``, results, model cards): only keys that act.

        Keys of another dataset, of another kind of task or of a switched-off
        feature (:data:`~fedmosaic.experiments.inert_keys.RULES`) are left
        out; loading the document gives this configuration back.

        Examples
        --------
        >>> config = load_config({"name": "x", "data": {"dataset": "bnlearn"},
        ...                       "runs": [{"name": "a", "method": "fcm"}]})
        >>> sorted(config.document()["data"])
        ['dataset', 'inputs', 'leak_task', 'network']
        >>> "partition" in config.document()
        False
        """
        return recorded_document(self.model_dump(mode="json", exclude_none=True), self)


def _check_name(name: str) -> None:
    r"""Refuse an experiment name that is not a plain folder name (it names the default output folder).

    Examples
    --------
    >>> _check_name("fcm-asia (seed 0)")
    >>> _check_name("../../elsewhere")
    Traceback (most recent call last):
    ...
    fedmosaic.errors.ConfigError: name: must be a plain name, not a path: no '/', '\', control characters, and not '.' or '..' (got '../../elsewhere')
    """
    if name in (".", "..") or any(c in "/\\" or ord(c) < 32 or ord(c) == 127 for c in name):
        raise ConfigError(
            "name",
            f"must be a plain name, not a path: no '/', '\\', control characters, and not '.' or '..' (got {name!r})",
        )


def load_config(source: dict[str, Any]) -> ExperimentConfig:
    """Validate a raw configuration (sections, cross-field rules, method parameters).

    Raises
    ------
    ConfigError
        Naming the first offending field.
    """
    config = validate(ExperimentConfig, source)
    assert isinstance(config, ExperimentConfig)
    _check_name(config.name)
    if config.grid is not None:
        _check_grid(source, config.grid)
    if config.tables is not None:
        _check_tables(config)
    _check_federation(config)
    seen: set[str] = set()
    for index, run in enumerate(config.runs):
        if run.name in seen:
            raise ConfigError(f"runs.{index}.name", f"run names must be unique, '{run.name}' repeats")
        seen.add(run.name)
        method = get_method(run.method, field=f"runs.{index}.method")
        if method.kind != config.task_kind:
            given = (
                "a [vertical] section" if config.task_kind == "vertical" else f"data.dataset '{config.data.dataset}'"
            )
            raise ConfigError(
                f"runs.{index}.method",
                f"'{run.method}' is a {method.kind} method; {given} gives a {config.task_kind} task",
            )
        method_params(config, index)
        check_supported(config, index, method)
    if config.vertical is not None:
        _check_vertical(config)
    if config.task_kind == "vertical":
        _check_vertical_runs(config)
    concepts = config.concepts
    if config.task_kind == "concepts" and config.tables is None and concepts.initial_clients > concepts.num_clients:
        raise ConfigError(
            "concepts.initial_clients",
            f"must be <= concepts.num_clients ({concepts.num_clients}), got {concepts.initial_clients}",
        )
    check_inert_keys(source, config)
    checked: ExperimentConfig = with_model_code(config)
    return checked


def _check_grid(source: dict[str, Any], grid: GridSection) -> None:
    for field in ("rows", "columns"):
        if getattr(grid, field) not in grid.axes:
            raise ConfigError(
                f"grid.{field}", f"must be one of the axes ({', '.join(grid.axes)}), got {getattr(grid, field)!r}"
            )
    for key, values in grid.axes.items():
        if not values:
            raise ConfigError(f"grid.axes.{key}", "needs at least one value")
    names = [run.get("name") for run in source.get("runs", []) if isinstance(run, dict)]
    if grid.compare is not None and grid.compare not in names:
        raise ConfigError(
            "grid.compare", f"must be the name of a run ({', '.join(map(str, names))}), got {grid.compare!r}"
        )
    for point_values, point in grid_points(source):
        try:
            load_config(point)
        except ConfigError as error:
            at = ", ".join(f"{k}={v}" for k, v in point_values.items())
            raise ConfigError(error.field, f"{error.message} (in the grid point {at})") from None


def method_params(config: ExperimentConfig, index: int) -> MethodParams:
    """The validated parameters of run ``index``."""
    run = config.runs[index]
    method = get_method(run.method, field=f"runs.{index}.method")
    params = validate(method.params, run.params, prefix=f"runs.{index}.params")
    assert isinstance(params, MethodParams)
    return params


def _check_federation(config: ExperimentConfig) -> None:
    clients = config.num_clients
    source = "concepts.num_clients" if config.task_kind == "concepts" else "partition.num_clients"
    source = "the sites of [tables]" if config.tables is not None else source
    federation = config.federation
    for key in ("arrivals", "departures", "failures"):
        for i, entry in enumerate(getattr(federation, key)):
            outside = [c for c in entry.clients if c >= clients]
            if outside:
                raise ConfigError(
                    f"federation.{key}.{i}.clients",
                    f"client ids must be in 0..{clients - 1} ({source} = {clients}), got {outside}",
                )
            if entry.round > federation.rounds:
                raise ConfigError(
                    f"federation.{key}.{i}.round",
                    f"must be <= federation.rounds ({federation.rounds}), got {entry.round}",
                )
    if federation.clients_per_round is not None and federation.clients_per_round > clients:
        raise ConfigError(
            "federation.clients_per_round", f"must be <= {source} ({clients}), got {federation.clients_per_round}"
        )
    _check_noise(config)
    check_device_name(config.train.device)
    privacy = config.privacy
    if privacy.noise_multiplier > 0 and privacy.target_epsilon is not None:
        raise ConfigError("privacy.target_epsilon", "set either noise_multiplier or target_epsilon, not both")
    if privacy.enabled and (config.aggregation.rule != "mean" or config.aggregation.clip_norm is not None):
        raise ConfigError(
            "aggregation.rule",
            "client-level privacy clips and averages by itself: keep aggregation.rule = 'mean' without clip_norm",
        )
    _check_secure(config)
    if privacy.target_epsilon is not None:  # the noise search fails here, not after a round
        from fedmosaic.federation.privacy import noise_for_epsilon  # NumPy's: only where a noise is searched

        noise_for_epsilon(privacy.target_epsilon, privacy.delta, sample_rate(config, clients), federation.rounds)
    if federation.min_replies > clients:
        raise ConfigError(
            "federation.min_replies",
            f"must be <= {source} ({clients}), got {federation.min_replies}",
        )


def _check_secure(config: ExperimentConfig) -> None:
    """Refuse what secure aggregation cannot combine with: whatever needs one client's update at the server."""
    if not config.aggregation.secure:
        return
    hidden = "secure aggregation hides each update from the server"
    aggregation, attack = config.aggregation, config.attack
    if aggregation.rule != "mean":
        raise ConfigError("aggregation.rule", f"{hidden}, and '{aggregation.rule}' needs each one: keep 'mean'")
    if aggregation.clip_norm is not None:
        raise ConfigError("aggregation.clip_norm", f"{hidden}, so it cannot bound each one: leave clip_norm unset")
    if attack.fraction > 0 and attack.kind in UPDATE_ATTACKS:
        raise ConfigError("attack.kind", f"{hidden}, and '{attack.kind}' is measured on each one: not combined")


def _check_noise(config: ExperimentConfig) -> None:
    """A noise multiplier is 0 (off) or at least :data:`~fedmosaic.limits.MIN_NOISE`."""
    for field, value in (
        ("privacy.noise_multiplier", config.privacy.noise_multiplier),
        ("train.dp_noise_multiplier", config.train.dp_noise_multiplier),
    ):
        if 0 < value < MIN_NOISE:
            raise ConfigError(field, f"must be 0 (off) or from {MIN_NOISE} to 1000, got {value!r}")


def sample_rate(config: ExperimentConfig, num_clients: int) -> float:
    """The share of the clients selected per round (``clients_per_round`` or ``fraction``)."""
    federation = config.federation
    if federation.clients_per_round is not None:
        return min(1.0, federation.clients_per_round / num_clients)
    return federation.fraction


def _check_vertical(config: ExperimentConfig) -> None:
    vertical = config.vertical
    assert vertical is not None
    if "vertical" not in get_dataset(config.data.dataset).tasks:
        accepted = ", ".join(d.name for d in DATASETS.values() if "vertical" in d.tasks)
        raise ConfigError("data.dataset", f"a vertical task needs one of {accepted}, got '{config.data.dataset}'")
    from fedmosaic.data.missingness import parse_missingness  # NumPy's: only for a vertical experiment

    parties = vertical.parties(config.data.dataset)
    settings = [("vertical.train_missing", vertical.train_missing)] + [
        ("vertical.test_missing", t) for t in vertical.test_settings()
    ]
    parsed = [parse_missingness(text, field) for field, text in settings]
    for (field, text), missingness in zip(settings, parsed, strict=True):
        if missingness.mechanism == "keep" and missingness.value > parties:
            raise ConfigError(field, f"keep:<k> needs k <= the {parties} parties (got {text!r})")
    if vertical.protocol == "paper" and vertical.validation_share > 0:
        raise ConfigError(
            "vertical.validation_fraction",
            f"the paper protocol tests the last round without validation: set 0 or leave it unset, got {vertical.validation_fraction}",
        )
    labels = [missingness.label for missingness in parsed[1:]]
    if not labels or len(set(labels)) < len(labels):
        raise ConfigError(
            "vertical.test_missing", f"needs distinct settings, at least one (got {vertical.test_missing})"
        )


def _check_vertical_runs(config: ExperimentConfig) -> None:
    for index, run in enumerate(config.runs):
        if run.setting != "federated":
            raise ConfigError(f"runs.{index}.setting", f"vertical methods run 'federated' only, got '{run.setting}'")
        for stage in ("stage1_rounds", "pretrain_rounds"):
            first = getattr(method_params(config, index), stage, None)
            if first is not None and first >= config.federation.rounds:
                raise ConfigError(
                    f"runs.{index}.params.{stage}",
                    f"must be < federation.rounds ({config.federation.rounds}) to leave rounds for the classifier, got {first}",
                )


# --- [tables]: sites' own tables ------------------------------------------------


def _check_tables(config: ExperimentConfig) -> None:
    """The ``[tables]`` schema's own rules, and what it rules out elsewhere."""
    tables = config.tables
    assert tables is not None
    check_tables(tables)
    if config.vertical is not None:
        raise ConfigError("vertical", "a [tables] experiment declares its parties in [tables]; drop [vertical]")
    if config.federation.engine != "inprocess":
        for index, run in enumerate(config.runs):
            if run.setting != "federated":
                raise ConfigError(
                    f"runs.{index}.setting",
                    f"on Flower each site's table stays on its node: only 'federated' runs, got '{run.setting}'",
                )


def fingerprint(document: Any) -> str:
    """A stable hash of a JSON-ready document (identifies a configuration)."""
    canonical = json.dumps(document, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


EXECUTION_ONLY = ("workers", "client_cache", "client_memory_mb", "reply_timeout_s")
"""``[federation]`` keys that change how a run executes, never its numbers: ``--resume`` may change them."""


def result_fingerprint(document: dict[str, Any]) -> str:
    """The :func:`fingerprint` of a configuration document without the :data:`EXECUTION_ONLY` keys.

    Examples
    --------
    >>> a = {"name": "x", "federation": {"rounds": 2, "workers": 1}}
    >>> result_fingerprint(a) == result_fingerprint({"name": "x", "federation": {"rounds": 2, "workers": 4}})
    True
    >>> result_fingerprint(a) == result_fingerprint({**a, "seed": 1})
    False
    """
    federation = {k: v for k, v in document.get("federation", {}).items() if k not in EXECUTION_ONLY}
    return fingerprint({**document, "federation": federation})
