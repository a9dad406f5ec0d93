"""Keys that would be accepted and then do nothing: each is refused on one line, naming why.

A key of another dataset, of another kind of task or of a switched-off
feature validates against its section, yet the run never reads it: its
results are bit for bit those of the run without it, and whoever set it
believes otherwise. :func:`check_inert_keys` refuses every key the user set
(present in the raw configuration, not a default) where :data:`RULES` says
it has no effect.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fedmosaic.errors import ConfigError
from fedmosaic.experiments.datasets import get_dataset
from fedmosaic.methods.architectures import MODELS
from fedmosaic.methods.train_params import TrainParams

ExperimentConfig = Any
"""A validated :class:`~fedmosaic.experiments.config.ExperimentConfig` (not imported: it calls this module)."""


@dataclass(frozen=True)
class Rule:
    """Where keys act.

    Parameters
    ----------
    keys : tuple of str
        Dotted keys, or a section (every key in it).
    acts : callable ExperimentConfig -> bool
        Whether they have an effect in this experiment.
    otherwise : str or callable ExperimentConfig -> str
        Why not, when they have none (after "has no effect ").
    """

    keys: tuple[str, ...]
    acts: Callable[[ExperimentConfig], bool]
    otherwise: str | Callable[[ExperimentConfig], str]

    def why_not(self, config: ExperimentConfig) -> str:
        """Why the keys have no effect in ``config``."""
        return self.otherwise if isinstance(self.otherwise, str) else self.otherwise(config)


def _taken_by_kind(key: str) -> Callable[[ExperimentConfig], bool]:
    """Whether ``model.<key>`` reaches the builder: a factory's run is refused by its own rule, so only the kind's."""
    return lambda c: c.model.factory is not None or key in MODELS.get(c.model.kind, field="model.kind").keys


def _kind_takes(config: ExperimentConfig) -> str:
    keys = MODELS.get(config.model.kind, field="model.kind").keys
    takes = ", ".join(f"model.{key}" for key in keys) or "neither model.hidden nor model.channels"
    return f"with model.kind = {config.model.kind!r} (it takes {takes})"


def _dataset(*names: str) -> Callable[[ExperimentConfig], bool]:
    return lambda c: c.tables is None and c.data.dataset in names


BNLEARN = (
    "data.network",
    "data.task",
    "data.latent_dim",
    "data.noise_share",
    "data.inputs",
    "data.leak_task",
)
SIMPSON = (
    "data.samples_per_client",
    "data.simpson_design",
    "data.test_colours",
    "data.pretrain_samples",
    "data.validation_samples",
    "data.evaluate_on",
    "data.resolution",
    "train.pretrain_epochs",
)

VERTICAL_PARAMS = tuple(f"train.{name}" for name in TrainParams.model_fields if name != "device")
"""The ``[train]`` keys a vertical method takes in its own parameters instead (all but the device, which every method honours)."""

RULES = (
    Rule(("data",), lambda c: c.tables is None, "with [tables] (its sites' files replace [data])"),
    Rule(BNLEARN, _dataset("bnlearn"), "outside data.dataset = 'bnlearn'"),
    Rule(("data.samples",), _dataset("bnlearn", "shapes"), "outside data.dataset = 'bnlearn' or 'shapes'"),
    Rule(SIMPSON, _dataset("simpson-mnist"), "outside data.dataset = 'simpson-mnist'"),
    Rule(
        ("data.test_fraction",),
        lambda c: c.tables is None and get_dataset(c.data.dataset).random_split,
        "outside data.dataset = 'digits' or a plugin's dataset split at random (the others have a fixed test split)",
    ),
    Rule(
        ("partition",),
        lambda c: c.tables is None and c.task_kind == "classification",
        "on a concepts or vertical task, or with [tables] (their clients are laid out elsewhere)",
    ),
    Rule(
        ("concepts",),
        lambda c: c.tables is None and c.task_kind == "concepts",
        "outside concept data (data.dataset = 'bnlearn' or 'shapes'; with [tables], each site is a client)",
    ),
    Rule(
        ("model",),
        lambda c: c.task_kind == "classification",
        "on a concepts or vertical task (its model is set in runs.N.params)",
    ),
    Rule(
        ("model.kind", "model.hidden", "model.channels"),
        lambda c: c.model.factory is None,
        "with model.factory (your factory builds the model)",
    ),
    Rule(("model.hidden",), _taken_by_kind("hidden"), _kind_takes),
    Rule(("model.channels",), _taken_by_kind("channels"), _kind_takes),
    Rule(VERTICAL_PARAMS, lambda c: c.task_kind != "vertical", "on a vertical task (set runs.N.params)"),
    Rule(("train.momentum",), lambda c: c.train.optimizer == "sgd", "with train.optimizer = 'adam'"),
    Rule(
        ("aggregation.trim",),
        lambda c: c.aggregation.rule == "trimmed-mean",
        "outside aggregation.rule = 'trimmed-mean'",
    ),
    Rule(
        ("aggregation.secure_threshold", "aggregation.secure_range"),
        lambda c: c.aggregation.secure,
        "without aggregation.secure = true",
    ),
    Rule(
        ("privacy", "aggregation", "attack"),
        lambda c: any(run.setting == "federated" for run in c.runs),
        "without a federated run (it applies to federated runs only)",
    ),
    Rule(
        ("privacy.clip_norm", "privacy.delta"),
        lambda c: c.privacy.enabled,
        "without noise (privacy.noise_multiplier or privacy.target_epsilon)",
    ),
)
"""Every key that can be set yet not act, and when it acts."""


def recorded_document(document: dict[str, Any], config: ExperimentConfig) -> dict[str, Any]:
    """``document`` (the dump of ``config``) without the keys and sections that have no effect in ``config``.

    Examples
    --------
    >>> from fedmosaic.experiments.config import load_config
    >>> config = load_config({"name": "x", "data": {"dataset": "digits"}, "runs": [{"name": "a", "method": "fedavg"}]})
    >>> recorded = recorded_document(config.model_dump(mode="json"), config)
    >>> sorted(recorded["data"]), "concepts" in recorded
    (['data_dir', 'dataset', 'test_fraction'], False)
    """
    recorded = {name: dict(value) if isinstance(value, dict) else value for name, value in document.items()}
    for rule in RULES:
        if rule.acts(config):
            continue
        for key in rule.keys:
            section, _, name = key.partition(".")
            if not name:
                recorded.pop(section, None)
            elif isinstance(recorded.get(section), dict):
                recorded[section].pop(name, None)
    return recorded


def check_inert_keys(source: dict[str, Any], config: ExperimentConfig) -> None:
    """Refuse the first key set in ``source`` that has no effect in ``config``.

    Raises
    ------
    ConfigError
        Naming the key and why it has no effect.

    Examples
    --------
    >>> from fedmosaic.experiments.config import load_config
    >>> load_config({"name": "x", "data": {"dataset": "digits", "network": "alarm"},
    ...              "runs": [{"name": "a", "method": "fedavg"}]})
    Traceback (most recent call last):
    ...
    fedmosaic.errors.ConfigError: data.network: has no effect outside data.dataset = 'bnlearn'; remove it
    """
    for rule in RULES:
        for key in rule.keys:
            for found in _set_keys(source, key, config):
                if not rule.acts(config):
                    raise ConfigError(found, f"has no effect {rule.why_not(config)}; remove it")


def _set_keys(source: dict[str, Any], key: str, config: ExperimentConfig) -> list[str]:
    """The dotted keys under ``key`` that ``source`` sets to another value than their default.

    A key at its default changes nothing either way (a recorded ``config.toml``
    lists every key with its value).
    """
    node: Any = source
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return []
        node = node[part]
    section = key.split(".")[0]
    defaults = type(getattr(config, section))()
    names = list(node) if isinstance(node, dict) else [key.split(".")[1]]
    values = node if isinstance(node, dict) else {names[0]: node}
    return [f"{section}.{name}" for name in names if values[name] != getattr(defaults, name, None)]
