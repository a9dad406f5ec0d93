"""Refuse a run whose method would skip a runtime feature the experiment asks for.

Each registered method declares the features it honours
(:class:`~fedmosaic.methods.base.Capabilities`); a configuration that asks a
method for another is refused on one line naming the field and the method,
rather than run with the feature silently left out (and, for privacy, an
epsilon reported for noise never added).
"""

from __future__ import annotations

from typing import Protocol

from fedmosaic.errors import ConfigError
from fedmosaic.experiments.sections import AggregationSection, AttackSection, PrivacySection, RunSection
from fedmosaic.methods.base import Method
from fedmosaic.methods.registry import METHODS
from fedmosaic.methods.train_params import TrainParams


class Experiment(Protocol):
    """What the check reads of an experiment (an :class:`~fedmosaic.experiments.config.ExperimentConfig`)."""

    @property
    def train(self) -> TrainParams:
        """The local training parameters."""

    @property
    def privacy(self) -> PrivacySection:
        """The ``[privacy]`` section."""

    @property
    def aggregation(self) -> AggregationSection:
        """The ``[aggregation]`` section."""

    @property
    def attack(self) -> AttackSection:
        """The ``[attack]`` section."""

    @property
    def runs(self) -> list[RunSection]:
        """The runs."""


FEATURES: dict[str, tuple[str, str]] = {
    "dp_sgd": ("local DP-SGD", "it needs a loss of per-example terms"),
    "client_dp": ("client-level DP", "it needs every upload to pass through one noised aggregation per round"),
    "robust_aggregation": ("robust aggregation", "it needs every model upload to pass through the rule"),
    "update_attacks": ("sign-flip and scale attacks", "it needs replies that carry the model they were sent"),
    "graph_attacks": ("graph attacks", "it needs clients that upload confidence matrices"),
    "kept_optimizer": ("a kept optimizer state", "its clients must keep the optimizer in their client state"),
    "secure_aggregation": (
        "secure aggregation",
        "it needs every model upload to go through one secure weighted sum and nothing else to reveal an update",
    ),
}
"""What each capability flag stands for, in the words of the error message."""

UPDATE_ATTACKS = ("sign-flip", "scale")
GRAPH_ATTACKS = ("reversed-graph", "random-graph")


def requested(config: Experiment, run: RunSection) -> list[tuple[str, str]]:
    """The features ``run`` asks its method for: ``(field, capability)`` pairs, in the order of the sections.

    ``[aggregation]``, ``[privacy]`` and ``[attack]`` act on federated runs
    only; local DP-SGD and a kept optimizer state on every setting.

    Examples
    --------
    >>> from fedmosaic.experiments.config import load_config
    >>> config = load_config({"name": "x", "runs": [{"name": "a", "method": "fedavg"}], "aggregation": {"rule": "median"}})
    >>> requested(config, config.runs[0])
    [('aggregation.rule', 'robust_aggregation')]
    """
    asked = []
    if config.train.dp_noise_multiplier > 0:
        asked.append(("train.dp_noise_multiplier", "dp_sgd"))
    if config.train.optimizer_state == "kept":
        asked.append(("train.optimizer_state", "kept_optimizer"))
    if run.setting != "federated":
        return asked
    privacy, aggregation, attack = config.privacy, config.aggregation, config.attack
    if privacy.enabled:
        field = "privacy.target_epsilon" if privacy.target_epsilon is not None else "privacy.noise_multiplier"
        asked.append((field, "client_dp"))
    if aggregation.rule != "mean":
        asked.append(("aggregation.rule", "robust_aggregation"))
    if aggregation.clip_norm is not None:
        asked.append(("aggregation.clip_norm", "robust_aggregation"))
    if aggregation.secure:
        asked.append(("aggregation.secure", "secure_aggregation"))
    if attack.fraction > 0 and attack.kind in UPDATE_ATTACKS:
        asked.append(("attack.kind", "update_attacks"))
    if attack.fraction > 0 and attack.kind in GRAPH_ATTACKS:
        asked.append(("attack.kind", "graph_attacks"))
    return asked


def check_supported(config: Experiment, index: int, method: Method) -> None:
    """Refuse run ``index`` if it asks ``method`` for a feature the method does not honour.

    Raises
    ------
    ConfigError
        Naming the field that asks, the method, and the methods that honour the feature.
    """
    for field, capability in requested(config, config.runs[index]):
        if not getattr(method.supports, capability):
            feature, need = FEATURES[capability]
            honouring = sorted(m.name for m in METHODS.values() if getattr(m.supports, capability))
            raise ConfigError(
                field,
                f"method '{method.name}' of runs.{index} does not support {feature}: {need} "
                f"(methods that do: {', '.join(honouring)})",
            )
