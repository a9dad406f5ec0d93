"""The aggregation rule of a federated run, from ``[aggregation]`` and ``[privacy]``, and its secure aggregation.

Secure aggregation's module (and the Flower protocol code it builds on) is
imported only by a run that asks for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fedmosaic.experiments.config import ExperimentConfig, sample_rate
from fedmosaic.federation.logic import ClientLogic
from fedmosaic.federation.privacy import GaussianMechanism, PrivacyBudget, noise_for_epsilon
from fedmosaic.federation.robust import Aggregator, ClippedUpdates, Mean, Median, TrimmedMean

if TYPE_CHECKING:
    from fedmosaic.federation.secagg import SecureAggregation


def build_aggregation(config: ExperimentConfig, num_clients: int) -> tuple[Aggregator, PrivacyBudget | None]:
    """The rule the server combines replies with, and the privacy budget to account when it is private.

    Parameters
    ----------
    config : ExperimentConfig
        The experiment (``aggregation``, ``privacy``, ``federation`` sections).
    num_clients : int
        Clients of the federation (for the sampling rate of ``target_epsilon``).

    Examples
    --------
    >>> from fedmosaic.experiments.config import load_config
    >>> base = {"name": "x", "runs": [{"name": "a", "method": "fedavg"}]}
    >>> rule, budget = build_aggregation(load_config({**base, "aggregation": {"rule": "median"}}), 10)
    >>> type(rule).__name__, budget
    ('Median', None)
    """
    privacy = config.privacy
    if privacy.enabled:
        noise = privacy.noise_multiplier
        if privacy.target_epsilon is not None:
            noise = noise_for_epsilon(
                privacy.target_epsilon, privacy.delta, sample_rate(config, num_clients), config.federation.rounds
            )
        return GaussianMechanism(privacy.clip_norm, noise), PrivacyBudget(noise, privacy.delta)
    section = config.aggregation
    rule: Aggregator = {"mean": Mean(), "median": Median(), "trimmed-mean": TrimmedMean(section.trim)}[section.rule]
    if section.clip_norm is not None:
        rule = ClippedUpdates(rule, section.clip_norm)
    return rule, None


def build_secure(config: ExperimentConfig) -> SecureAggregation | None:
    """The server side of secure aggregation that ``aggregation.secure`` asks for, or None.

    Examples
    --------
    >>> from fedmosaic.experiments.config import load_config
    >>> base = {"name": "x", "runs": [{"name": "a", "method": "fedavg"}]}
    >>> build_secure(load_config({**base, "aggregation": {"secure": True, "secure_threshold": 0.5}})).threshold
    0.5
    """
    section = config.aggregation
    if not section.secure:
        return None
    from fedmosaic.federation.secagg import SecureAggregation

    return SecureAggregation(threshold=section.secure_threshold, clip_range=section.secure_range)


def secure_client(config: ExperimentConfig, logic: ClientLogic) -> ClientLogic:
    """``logic`` wrapped to take part in secure aggregation when ``aggregation.secure`` asks for it."""
    if not config.aggregation.secure:
        return logic
    from fedmosaic.federation.secagg import SecureClient

    return SecureClient(logic)
