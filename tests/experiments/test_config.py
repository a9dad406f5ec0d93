"""Experiment configuration: every bad input is one line naming the field."""

import math
import tomllib

import pytest
import tomli_w

from fedmosaic.errors import ConfigError
from fedmosaic.experiments.config import apply_overrides, fingerprint, load_config, method_params
from fedmosaic.experiments.presets import resolve_experiment
from fedmosaic.methods.horizontal.fedavg.params import FedProxParams

BASE = {"name": "t", "runs": [{"name": "FedAvg", "method": "fedavg"}]}


def _with(**sections):
    return {**BASE, **sections}


def _error(source) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        load_config(source)
    assert "\n" not in str(info.value)
    return info.value


def test_a_minimal_config_gets_documented_defaults() -> None:
    config = load_config(BASE)
    assert config.seed == 0
    assert config.data.dataset == "digits"
    assert config.partition.scheme == "dirichlet"
    assert config.partition.num_clients == 10
    assert config.federation.engine == "inprocess"
    assert config.federation.rounds == 20
    assert config.runs[0].setting == "federated"


@pytest.mark.parametrize(
    ("source", "field", "expected"),
    [
        (_with(partition={"alpah": 0.1}), "partition.alpah", "did you mean 'alpha'?"),
        (_with(federaton={}), "federaton", "did you mean 'federation'?"),
        (
            _with(runs=[{"name": "x", "method": "fedavg", "setings": "local"}]),
            "runs.0.setings",
            "did you mean 'setting'?",
        ),
        (_with(partition={"alpha": 0}), "partition.alpha", "greater than 0"),
        (_with(partition={"alpha": -1.0}), "partition.alpha", "greater than 0"),
        (_with(federation={"fraction": 1.5}), "federation.fraction", "less than or equal to 1"),
        (_with(federation={"rounds": "ten"}), "federation.rounds", "valid integer"),
        (_with(federation={"rounds": 2.5}), "federation.rounds", "valid integer"),
        (_with(partition={"scheme": "random"}), "partition.scheme", "'iid', 'dirichlet' or 'pathological'"),
        (
            _with(data={"dataset": "cifar"}),
            "data.dataset",
            "unknown dataset 'cifar'; did you mean 'cifar-10'? (accepted: bnlearn, cifar-10",
        ),
        (_with(train={"lr": 0}), "train.lr", "greater than 0"),
        (
            _with(train={"device": "gpu"}),
            "train.device",
            "expected 'auto', 'cpu', 'cuda', 'cuda:N' or 'mps', got 'gpu'",
        ),
        (_with(runs=[]), "runs", "at least 1"),
        (_with(runs=[{"name": "x", "method": "fedavgg"}]), "runs.0.method", "did you mean 'fedavg'?"),
        (_with(runs=[{"name": "x", "method": "fedprox", "params": {"mu": -1}}]), "runs.0.params.mu", "greater than 0"),
        (_with(runs=[{"name": "x", "method": "fedavg", "params": {"mu": 1.0}}]), "runs.0.params.mu", "unknown key"),
        (_with(runs=[{"name": "x", "method": "fedavg"}, {"name": "x", "method": "fedprox"}]), "runs.1.name", "unique"),
        (_with(federation={"arrivals": [{"clients": [12], "round": 3}]}), "federation.arrivals.0.clients", "0..9"),
        (_with(federation={"min_replies": 11}), "federation.min_replies", "<= partition.num_clients"),
        ({"runs": BASE["runs"]}, "name", "field required"),
    ],
)
def test_bad_values_are_reported_with_their_field(source, field: str, expected: str) -> None:
    error = _error(source)
    assert error.field == field
    assert expected in str(error)


def test_every_kind_of_task_takes_the_device_and_a_vertical_one_no_other_training_key() -> None:
    # Prepare
    vertical = {**_with(vertical={}, federation={"rounds": 30}), "runs": [{"name": "v", "method": "false-vfl"}]}

    # Execute / Assert
    assert load_config({**vertical, "train": {"device": "auto"}}).train.device == "auto"
    assert (
        load_config(_with(train={"device": "cuda:1"})).train.device == "cuda:1"
    )  # checked against the machine at run time
    assert _error({**vertical, "train": {"device": "auto", "lr": 0.1}}).field == "train.lr"


def test_unknown_key_lists_accepted_keys() -> None:
    error = _error(_with(partition={"alpah": 0.1}))
    assert "accepted: alpha, classes_per_client, min_size, num_clients, scheme" in str(error)


def test_method_parameters_are_validated_by_the_method() -> None:
    config = load_config(_with(runs=[{"name": "p", "method": "fedprox", "params": {"mu": 0.5}}]))
    params = method_params(config, 0)
    assert isinstance(params, FedProxParams)
    assert params.mu == 0.5


def test_overrides_parse_toml_values_and_reach_nested_keys() -> None:
    source = _with(runs=[{"name": "a", "method": "fedavg"}, {"name": "b", "method": "fedprox", "params": {"mu": 0.1}}])
    result = apply_overrides(
        source, ["partition.alpha=0.1", "federation.rounds=3", "runs.1.params.mu=0.5", "name=demo"]
    )
    assert result["partition"] == {"alpha": 0.1}
    assert result["federation"] == {"rounds": 3}
    assert result["runs"][1]["params"]["mu"] == 0.5
    assert result["name"] == "demo"
    assert source["runs"][1]["params"]["mu"] == 0.1  # the source is not modified


@pytest.mark.parametrize("override", ["novalue", "=3", "runs.7.name=x", "name.x=1"])
def test_malformed_overrides_are_rejected(override: str) -> None:
    with pytest.raises(ConfigError) as info:
        apply_overrides(BASE, [override])
    assert info.value.field == "--set"


def test_fingerprint_depends_on_content_not_key_order() -> None:
    assert fingerprint({"a": 1, "b": 2}) == fingerprint({"b": 2, "a": 1})
    assert fingerprint({"a": 1}) != fingerprint({"a": 2})


def test_a_method_must_match_the_kind_of_task_the_data_gives() -> None:
    error = _error(
        _with(data={"dataset": "bnlearn"}, runs=[{"name": "x", "method": "fedavg", "params": {"model": {}}}])
    )
    assert error.field == "runs.0.method"
    assert "'fedavg' is a classification method" in str(error)


def test_an_infinite_value_survives_the_recorded_config() -> None:
    source = {
        "name": "t",
        "data": {"dataset": "isolet"},
        "vertical": {"split": "dirichlet", "alpha": math.inf},
        "grid": {"axes": {"vertical.alpha": [math.inf, 1.0], "seed": [0]}, "rows": "vertical.alpha", "columns": "seed"},
        "runs": [{"name": "L", "method": "laser-vfl"}],
    }
    document = load_config(source).model_dump(mode="json", exclude_none=True)
    recorded = tomllib.loads(tomli_w.dumps(document))
    assert recorded["vertical"]["alpha"] == math.inf
    assert recorded["grid"]["axes"]["vertical.alpha"] == [math.inf, 1.0]
    assert load_config(recorded) == load_config(source)


def test_a_recorded_configuration_holds_only_the_keys_that_act_and_loads_back_the_same() -> None:
    # Prepare: the F-CMs demo preset (a Bayesian-network concepts task)
    config = load_config(apply_overrides(resolve_experiment("fcm-asia"), []))
    # Execute
    recorded = config.document()
    # Assert: no other dataset's keys, no [partition] or [vertical], and nothing lost
    assert set(recorded["data"]) == {"dataset", "network", "inputs", "leak_task"}
    assert "partition" not in recorded
    assert "vertical" not in recorded
    assert "model" not in recorded
    assert load_config(recorded) == config


def test_a_key_of_another_dataset_is_refused_naming_the_dataset_it_belongs_to() -> None:
    source = apply_overrides(resolve_experiment("fcm-asia"), ["data.simpson_design=bands"])
    with pytest.raises(
        ConfigError, match=r"data\.simpson_design: has no effect outside data\.dataset = 'simpson-mnist'"
    ):
        load_config(source)
