"""A run asking its method for a runtime feature the method does not honour is refused on one line."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import pytest

from fedmosaic.errors import ConfigError
from fedmosaic.experiments.capabilities import FEATURES
from fedmosaic.experiments.config import load_config
from fedmosaic.methods.base import Capabilities, Method
from fedmosaic.methods.registry import METHODS
from fedmosaic.testing.tiny_tasks import minimal_source

ASKING: dict[str, tuple[str, dict[str, Any]]] = {
    "dp_sgd": ("train.dp_noise_multiplier", {"train": {"dp_noise_multiplier": 1.0}}),
    "client_dp": ("privacy.noise_multiplier", {"privacy": {"noise_multiplier": 1.0}}),
    "robust_aggregation": ("aggregation.rule", {"aggregation": {"rule": "median"}}),
    "update_attacks": ("attack.kind", {"attack": {"fraction": 0.3, "kind": "scale"}}),
    "graph_attacks": ("attack.kind", {"attack": {"fraction": 0.3, "kind": "random-graph"}}),
    "kept_optimizer": ("train.optimizer_state", {"train": {"optimizer_state": "kept"}}),
    "secure_aggregation": ("aggregation.secure", {"aggregation": {"secure": True}}),
}
"""For each capability: the field that asks for it, and sections that ask."""


def test_every_capability_has_its_words_and_a_configuration_that_asks_for_it() -> None:
    names = [f.name for f in fields(Capabilities)]
    assert list(FEATURES) == names
    assert list(ASKING) == names


@pytest.mark.parametrize("capability", list(ASKING))
@pytest.mark.parametrize("method", list(METHODS.values()), ids=list(METHODS))
def test_a_feature_is_accepted_exactly_for_the_methods_that_declare_it(method: Method, capability: str) -> None:
    # Prepare
    field, sections = ASKING[capability]
    source = minimal_source(method, **sections)

    # Execute / Assert
    if getattr(method.supports, capability):
        load_config(source)
        return
    with pytest.raises(ConfigError) as info:
        load_config(source)
    assert info.value.field == field
    assert f"method '{method.name}'" in str(info.value)
    assert "\n" not in str(info.value)


def test_a_vertical_experiment_with_client_level_privacy_is_refused_naming_the_field_and_the_method() -> None:
    # Prepare: nothing of FALSE-VFL passes through an aggregation, so no noise would ever be added
    source = minimal_source(METHODS["false-vfl"], privacy={"target_epsilon": 4.0})

    # Execute
    with pytest.raises(ConfigError) as info:
        load_config(source)

    # Assert
    assert str(info.value).startswith("privacy.target_epsilon: method 'false-vfl' of runs.0 does not support")
    assert "client-level DP" in str(info.value)
    assert "\n" not in str(info.value)


def test_the_features_of_aggregation_privacy_and_attack_do_not_reach_a_centralized_run() -> None:
    # Prepare: SCAFFOLD honours neither; its centralized baseline keeps the mean, beside a federated FedAvg
    source = minimal_source(METHODS["scaffold"], aggregation={"clip_norm": 1.0})
    source["runs"][0]["setting"] = "centralized"
    source["runs"].append({"name": "b", "method": "fedavg"})

    # Execute / Assert
    assert load_config(source).aggregation.clip_norm == 1.0


def test_the_features_of_aggregation_privacy_and_attack_without_a_federated_run_are_refused() -> None:
    # Prepare: they would have no effect at all
    source = minimal_source(METHODS["fedavg"], aggregation={"clip_norm": 1.0})
    source["runs"][0]["setting"] = "centralized"

    # Execute / Assert
    with pytest.raises(ConfigError, match=r"aggregation\.clip_norm: has no effect without a federated run"):
        load_config(source)
