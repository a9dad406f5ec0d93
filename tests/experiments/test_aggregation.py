"""The aggregation rule of a federated run, selected by ``[aggregation]`` and ``[privacy]``."""

from __future__ import annotations

import pytest

from fedmosaic.errors import ConfigError
from fedmosaic.experiments.aggregation import build_aggregation
from fedmosaic.experiments.config import load_config
from fedmosaic.federation.privacy import GaussianMechanism, client_level_epsilon
from fedmosaic.federation.robust import ClippedUpdates, Mean, Median, TrimmedMean

BASE = {"name": "t", "runs": [{"name": "a", "method": "fedavg"}]}


@pytest.mark.parametrize(
    ("section", "kind", "inner"),
    [
        ({}, Mean, None),
        ({"rule": "median"}, Median, None),
        ({"rule": "trimmed-mean", "trim": 0.3}, TrimmedMean, None),
        ({"rule": "median", "clip_norm": 2.0}, ClippedUpdates, Median),
    ],
)
def test_the_aggregation_section_selects_the_rule(section: dict, kind: type, inner: type | None) -> None:
    rule, budget = build_aggregation(load_config({**BASE, "aggregation": section}), 10)
    assert isinstance(rule, kind)
    assert budget is None
    if inner is not None:
        assert isinstance(rule, ClippedUpdates)
        assert isinstance(rule.inner, inner)
        assert rule.max_norm == 2.0


def test_privacy_selects_the_gaussian_mechanism_and_its_budget() -> None:
    config = load_config({**BASE, "privacy": {"noise_multiplier": 1.3, "clip_norm": 0.5, "delta": 1e-4}})
    rule, budget = build_aggregation(config, 10)
    assert isinstance(rule, GaussianMechanism)
    assert rule.clip_norm == 0.5
    assert rule.noise_multiplier == 1.3
    assert budget is not None
    assert (budget.noise_multiplier, budget.delta) == (1.3, 1e-4)


def test_a_target_epsilon_finds_the_noise_that_spends_it_over_the_rounds() -> None:
    config = load_config(
        {**BASE, "federation": {"rounds": 10, "fraction": 0.5}, "privacy": {"target_epsilon": 4.0, "delta": 1e-5}}
    )
    rule, budget = build_aggregation(config, 10)
    assert budget is not None
    assert isinstance(rule, GaussianMechanism)
    assert client_level_epsilon(budget.noise_multiplier, [0.5] * 10, 1e-5) == pytest.approx(4.0, abs=0.05)


@pytest.mark.parametrize(
    ("sections", "field"),
    [
        ({"privacy": {"noise_multiplier": 1.0}, "aggregation": {"rule": "median"}}, "aggregation.rule"),
        ({"privacy": {"noise_multiplier": 1.0, "target_epsilon": 2.0}}, "privacy.target_epsilon"),
        ({"aggregation": {"trim": 0.5}}, "aggregation.trim"),
        ({"privacy": {"delta": 1.0}}, "privacy.delta"),
    ],
)
def test_contradictory_or_impossible_settings_are_one_line_errors(sections: dict, field: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config({**BASE, **sections})
    assert info.value.field == field
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("method", ["fedprox", "fedmix", "fedcfa"])
def test_local_dp_sgd_is_refused_for_methods_whose_loss_is_not_per_example(method: str) -> None:
    source = {**BASE, "runs": [{"name": "a", "method": method}], "train": {"dp_noise_multiplier": 1.0}}
    with pytest.raises(ConfigError, match="per-example terms") as info:
        load_config(source)
    assert info.value.field == "train.dp_noise_multiplier"


def test_local_dp_sgd_is_accepted_for_fcm_whose_masked_loss_is_per_example() -> None:
    source = {
        "name": "t",
        "data": {"dataset": "bnlearn", "network": "asia"},
        "runs": [{"name": "a", "method": "fcm"}],
        "train": {"dp_noise_multiplier": 1.0},
    }
    assert load_config(source).train.dp_noise_multiplier == 1.0
