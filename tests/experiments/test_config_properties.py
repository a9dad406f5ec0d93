"""Property-based: any configuration or override is accepted or rejected with one line naming a field."""

from __future__ import annotations

import copy

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fedmosaic.errors import ConfigError
from fedmosaic.experiments.config import ExperimentConfig, apply_overrides, load_config

BASE = {"name": "t", "runs": [{"name": "FedAvg", "method": "fedavg"}]}
KEYS = [
    "seed",
    "name",
    "description",
    "data.dataset",
    "data.test_fraction",
    "partition.num_clients",
    "partition.alpha",
    "partition.scheme",
    "federation.rounds",
    "federation.fraction",
    "federation.min_replies",
    "federation.dropout",
    "federation.retries",
    "federation.max_reply_bytes",
    "federation.failures",
    "attack.fraction",
    "attack.kind",
    "train.lr",
    "train.batch_size",
    "model.family",
    "runs.0.method",
    "runs.0.setting",
    "runs.0.params.mu",
    "runs.*.params",
    "runs.1.name",
    "grid.axes",
    "concepts.num_clients",
    "unknown.key",
    "runs",
    "data",
]
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**12), max_value=10**12),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)),
    max_leaves=6,
)
paths = st.one_of(st.sampled_from(KEYS), st.text(max_size=20))


def _one_line(error: ConfigError) -> None:
    text = str(error)
    assert text
    assert "\n" not in text


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(changes=st.dictionaries(paths, values, max_size=4))
def test_any_set_of_values_at_any_keys_is_accepted_or_one_line_config_error(changes: dict) -> None:
    source = copy.deepcopy(BASE)
    try:
        for key, value in changes.items():
            node: object = source
            parts = key.split(".")
            for part in parts[:-1]:
                if not isinstance(node, dict):
                    break
                node = node.setdefault(part, {})
            if isinstance(node, dict):
                node[parts[-1]] = value
        config = load_config(source)
    except ConfigError as error:
        _one_line(error)
        return
    assert isinstance(config, ExperimentConfig)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    overrides=st.lists(
        st.one_of(st.text(max_size=30), st.builds("{}={}".format, paths, st.text(max_size=12))), max_size=4
    )
)
def test_any_override_text_is_applied_and_checked_or_one_line_config_error(overrides: list[str]) -> None:
    try:
        config = load_config(apply_overrides(BASE, overrides))
    except ConfigError as error:
        _one_line(error)
        return
    assert isinstance(config, ExperimentConfig)


@settings(max_examples=100, deadline=None)
@given(
    source=st.one_of(values, st.dictionaries(st.sampled_from(["name", "runs", "seed", "grid", "federation"]), values))
)
def test_any_document_is_accepted_or_one_line_config_error(source: object) -> None:
    try:
        load_config(source)  # type: ignore[arg-type]
    except ConfigError as error:
        _one_line(error)
