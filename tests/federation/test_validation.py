"""Validation of replies: every reply is accepted or rejected with a one-line reason, nothing else."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from fedmosaic.federation import ArraySpec, Message, ReplyLimits, ReplySpec, check_reply, label_means_check
from fedmosaic.federation.validation import log_variance_check

SENT = {"layer.weight": np.zeros((3, 2), np.float32), "layer.bias": np.zeros(3, np.float32)}
SPEC = ReplySpec.like(SENT, metrics={"num_examples", "train_loss"})
LIMITS = ReplyLimits(max_bytes=4096, max_examples=1000)


def _good(**changes: object) -> Message:
    reply = Message(
        arrays={k: np.ones_like(v) for k, v in SENT.items()}, metrics={"num_examples": 10.0, "train_loss": 0.5}
    )
    for key, value in changes.items():
        setattr(reply, key, value)
    return reply


def test_a_reply_holding_the_model_as_sent_is_accepted() -> None:
    assert check_reply(_good(), SPEC, LIMITS) is None


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (_good(arrays={**_good().arrays, "extra": np.zeros(1, np.float32)}), "unexpected array 'extra'"),
        (_good(arrays={"layer.weight": np.ones((3, 2), np.float32)}), "missing arrays"),
        (_good(arrays={**_good().arrays, "layer.bias": np.ones(4, np.float32)}), "shape (4,), expected (3,)"),
        (_good(arrays={**_good().arrays, "layer.bias": np.ones(3, np.float64)}), "dtype float64, expected float32"),
        (_good(arrays={**_good().arrays, "layer.bias": np.array([1, np.nan, 1], np.float32)}), "non-finite"),
        (_good(arrays={**_good().arrays, "layer.bias": np.array([1, np.inf, 1], np.float32)}), "non-finite"),
        (_good(arrays={**_good().arrays, "layer.bias": np.array(["a", "b", "c"])}), "not numeric"),
        (_good(arrays={**_good().arrays, "layer.bias": [1.0, 2.0, 3.0]}), "not an ndarray"),
        (_good(arrays={**_good().arrays, "big": np.zeros(2000, np.float32)}), "> limit 4096"),
        (_good(metrics={"num_examples": 0.0, "train_loss": 0.5}), "num_examples 0.0 is not in"),
        (_good(metrics={"num_examples": 1e6, "train_loss": 0.5}), "num_examples 1000000.0 is not in"),
        (_good(metrics={"num_examples": 10.0, "train_loss": float("nan")}), "not a finite number"),
        (_good(metrics={"num_examples": 10.0}), "missing metrics ['train_loss']"),
        (_good(metrics={"num_examples": 10.0, "train_loss": "low"}), "not a finite number"),
        (_good(config={"note": "hello"}), "unexpected config key 'note'"),
        (_good(kind=3), "kind is a int"),
        ("not a message", "not a message (str)"),
        (None, "not a message (NoneType)"),
    ],
)
def test_a_malformed_reply_is_rejected_with_its_reason(reply: object, reason: str) -> None:
    got = check_reply(reply, SPEC, LIMITS)
    assert got is not None
    assert reason in got, got


def test_a_partial_spec_accepts_some_of_the_modules_but_not_others() -> None:
    spec = ReplySpec.like(SENT, metrics={"num_examples"}, partial=True)
    some = Message(arrays={"layer.bias": np.ones(3, np.float32)}, metrics={"num_examples": 1.0})
    assert check_reply(some, spec, LIMITS) is None
    assert check_reply(Message(arrays={"other": np.ones(3, np.float32)}, metrics={"num_examples": 1.0}), spec, LIMITS)


def test_a_method_check_that_raises_rejects_the_reply_instead_of_crashing() -> None:
    def broken(reply: Message) -> str | None:
        raise KeyError("missing")

    spec = ReplySpec(open=True, checks=(broken,))
    assert check_reply(Message(), spec) == "KeyError: 'missing'"


def test_label_means_must_pair_fit_the_examples_and_be_distributions() -> None:
    spec = ReplySpec(
        arrays={"mx": ArraySpec((None, 2), "float32"), "my": ArraySpec((None, 2), "float32")},
        metrics=frozenset({"num_examples"}),
        checks=(label_means_check("mx", "my", lambda n: int(n) // 2),),
    )

    def reply(rows: int, y: float, examples: float = 8.0) -> Message:
        arrays = {"mx": np.zeros((rows, 2), np.float32), "my": np.full((rows, 2), y, np.float32)}
        return Message(arrays=arrays, metrics={"num_examples": examples})

    assert check_reply(reply(4, 0.5), spec) is None
    assert "more than the 4" in str(check_reply(reply(5, 0.5), spec))
    assert "not distributions" in str(check_reply(reply(2, 0.7), spec))
    assert "hold 0 and 0 rows" in str(check_reply(reply(0, 0.5), spec))


@pytest.mark.parametrize(
    ("dtype", "logvar", "accepted"),
    [
        ("float32", 80.0, True),
        ("float32", -80.0, True),
        ("float32", 100.0, False),
        ("float32", -100.0, False),
        ("float64", 100.0, True),
    ],
)
def test_log_variances_must_stand_for_positive_finite_variances_in_their_dtype(
    dtype: str, logvar: float, accepted: bool
) -> None:
    spec = ReplySpec(arrays={"logvar": ArraySpec((2,), dtype)}, checks=(log_variance_check("logvar"),))
    reply = Message(arrays={"logvar": np.array([0.0, logvar], dtype)})
    reason = check_reply(reply, spec)
    assert (reason is None) == accepted
    assert accepted or f"variance exp({logvar:g}) is not a positive finite {dtype}" in str(reason)


# ----------------------------------------------------------------------------- property-based

names = st.text(min_size=0, max_size=12)
dtypes = st.sampled_from(["float32", "float64", "int64", "int8", "bool", "complex64", "uint8", "U3"])
arrays = dtypes.flatmap(lambda dt: hnp.arrays(np.dtype(dt), hnp.array_shapes(min_dims=0, max_dims=3, max_side=4)))
odd_values = st.one_of(
    st.none(),
    st.integers(),
    st.floats(allow_nan=True),
    st.text(max_size=5),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    arrays,
)
metrics = st.dictionaries(
    st.one_of(st.sampled_from(["num_examples", "train_loss"]), names, st.integers()),
    st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(min_value=-10, max_value=10**12), odd_values),
    max_size=4,
)
configs = st.dictionaries(st.one_of(names, st.integers()), odd_values, max_size=3)
array_maps = st.dictionaries(
    st.one_of(st.sampled_from(sorted(SENT)), names, st.integers()), st.one_of(arrays, odd_values), max_size=4
)
messages = st.builds(
    Message, arrays=array_maps, config=configs, metrics=metrics, kind=st.one_of(st.just("train"), names, st.integers())
)
replies = st.one_of(messages, odd_values, st.builds(_good))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(reply=replies)
def test_any_reply_is_accepted_or_rejected_with_a_one_line_reason(reply: object) -> None:
    for spec in (SPEC, ReplySpec(open=True), ReplySpec.like(SENT, partial=True)):
        reason = check_reply(reply, spec, LIMITS)
        assert reason is None or (isinstance(reason, str) and reason and "\n" not in reason)


@settings(max_examples=200, deadline=None)
@given(reply=messages)
def test_an_accepted_reply_holds_only_declared_finite_arrays_of_the_declared_shapes(reply: Message) -> None:
    if check_reply(reply, SPEC, LIMITS) is not None:
        return
    assert set(reply.arrays) == set(SENT)
    for name, array in reply.arrays.items():
        assert array.shape == SENT[name].shape
        assert array.dtype == SENT[name].dtype
        assert np.isfinite(array).all()
    assert 0 < reply.metrics["num_examples"] <= LIMITS.max_examples
