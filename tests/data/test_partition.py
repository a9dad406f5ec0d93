"""Specification of the horizontal partitioners."""

import math
from typing import Any

import numpy as np
import pytest

from fedmosaic.data.partition import (
    MAX_DIRICHLET_DRAWS,
    dirichlet_partition,
    iid_partition,
    partition,
    pathological_partition,
)
from fedmosaic.errors import ConfigError

LABELS = np.repeat(np.arange(10), 100)  # 1000 samples, 10 balanced classes
ALPHA = "partition.alpha: must be a finite number > 0"


def assert_disjoint_and_sorted(parts: list[np.ndarray]) -> None:
    joined = np.concatenate(parts)
    assert len(np.unique(joined)) == len(joined)
    for part in parts:
        assert part.dtype == np.int64
        assert np.all(np.diff(part) > 0)


def assert_covers(parts: list[np.ndarray], n_samples: int) -> None:
    np.testing.assert_array_equal(np.sort(np.concatenate(parts)), np.arange(n_samples))


def label_skew(parts: list[np.ndarray], labels: np.ndarray) -> float:
    """Mean total-variation distance between each client's label mix and the global one."""
    overall = np.bincount(labels) / len(labels)
    mixes = [np.bincount(labels[part], minlength=len(overall)) / len(part) for part in parts]
    return float(np.mean([0.5 * np.abs(mix - overall).sum() for mix in mixes]))


def test_iid_deals_every_sample_into_near_equal_clients() -> None:
    # Prepare
    rng = np.random.default_rng(0)

    # Execute
    parts = iid_partition(103, 10, rng)

    # Assert
    assert_disjoint_and_sorted(parts)
    assert_covers(parts, 103)
    assert sorted({len(part) for part in parts}) == [10, 11]


def test_dirichlet_covers_every_sample_and_respects_min_size() -> None:
    # Prepare
    rng = np.random.default_rng(0)

    # Execute
    parts = dirichlet_partition(LABELS, 20, alpha=0.3, rng=rng, min_size=20)

    # Assert
    assert len(parts) == 20
    assert_disjoint_and_sorted(parts)
    assert_covers(parts, len(LABELS))
    assert min(len(part) for part in parts) >= 20


def test_dirichlet_skew_grows_as_alpha_shrinks() -> None:
    # Prepare
    skewed_rng, even_rng = np.random.default_rng(0), np.random.default_rng(0)

    # Execute
    skewed = dirichlet_partition(LABELS, 10, alpha=0.1, rng=skewed_rng, min_size=1)
    even = dirichlet_partition(LABELS, 10, alpha=100.0, rng=even_rng, min_size=1)

    # Assert
    assert label_skew(skewed, LABELS) > 0.5
    assert label_skew(even, LABELS) < 0.1


def test_pathological_gives_each_client_exactly_k_classes_and_uses_all_classes() -> None:
    # Prepare
    rng = np.random.default_rng(0)

    # Execute
    parts = pathological_partition(LABELS, 15, classes_per_client=2, rng=rng, min_size=10)

    # Assert
    assert_disjoint_and_sorted(parts)
    assert_covers(parts, len(LABELS))
    assert [len(np.unique(LABELS[part])) for part in parts] == [2] * 15
    assert min(len(part) for part in parts) >= 10


def test_pathological_leaves_unheld_classes_out() -> None:
    # Prepare: 2 clients x 3 classes cannot hold all 10 classes
    rng = np.random.default_rng(0)

    # Execute
    parts = pathological_partition(LABELS, 2, classes_per_client=3, rng=rng)

    # Assert
    held = np.unique(LABELS[np.concatenate(parts)])
    assert len(held) == 6
    assert sum(len(part) for part in parts) == 600


@pytest.mark.parametrize(
    "scheme_kwargs",
    [
        {"scheme": "iid"},
        {"scheme": "dirichlet", "alpha": 0.5, "min_size": 5},
        {"scheme": "pathological", "classes_per_client": 3, "min_size": 5},
    ],
)
def test_the_same_seed_gives_the_same_partition(scheme_kwargs: dict[str, Any]) -> None:
    # Prepare
    first_rng, again_rng, other_rng = (np.random.default_rng(seed) for seed in (7, 7, 8))

    # Execute
    first = partition(LABELS, num_clients=8, rng=first_rng, **scheme_kwargs)
    again = partition(LABELS, num_clients=8, rng=again_rng, **scheme_kwargs)
    other = partition(LABELS, num_clients=8, rng=other_rng, **scheme_kwargs)

    # Assert
    assert all(np.array_equal(a, b) for a, b in zip(first, again, strict=True))
    assert not all(np.array_equal(a, b) for a, b in zip(first, other, strict=True))


def test_the_dispatcher_calls_the_named_partitioner() -> None:
    # Prepare
    direct_rng, dispatched_rng = np.random.default_rng(3), np.random.default_rng(3)

    # Execute
    direct = pathological_partition(LABELS, 5, 4, direct_rng, min_size=1)
    dispatched = partition(
        LABELS, scheme="pathological", num_clients=5, rng=dispatched_rng, classes_per_client=4, min_size=1
    )

    # Assert
    assert all(np.array_equal(a, b) for a, b in zip(direct, dispatched, strict=True))


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"scheme": "iid", "num_clients": 0}, "partition.num_clients: must be >= 1 (got 0)"),
        (
            {"scheme": "dirichlet", "num_clients": 1001},
            "partition.num_clients: more clients than samples: must be <= 1000 (got 1001)",
        ),
        ({"scheme": "iid", "num_clients": 1001}, "partition.num_clients: more clients than samples"),
        ({"scheme": "dirichlet", "alpha": 0.0}, f"{ALPHA} (got 0.0)"),
        ({"scheme": "dirichlet", "alpha": -1.0}, f"{ALPHA} (got -1.0)"),
        ({"scheme": "dirichlet", "alpha": math.inf}, f"{ALPHA} (got inf)"),
        ({"scheme": "dirichlet", "alpha": math.nan}, f"{ALPHA} (got nan)"),
        (
            {"scheme": "pathological", "classes_per_client": 0},
            "partition.classes_per_client: must be >= 1 and <= the number of classes, 10 (got 0)",
        ),
        (
            {"scheme": "pathological", "classes_per_client": 11},
            "partition.classes_per_client: must be >= 1 and <= the number of classes, 10 (got 11)",
        ),
        ({"scheme": "dirichlet", "min_size": -1}, "partition.min_size: must be >= 0 (got -1)"),
        (
            {"scheme": "pathological", "num_clients": 10, "min_size": 101},
            "partition.min_size: cannot be met: 10 clients x 101 samples exceeds the 1000 samples; must be <= 100",
        ),
        (
            {"scheme": "pathological", "num_clients": 101, "classes_per_client": 10, "min_size": 1},
            "partition.classes_per_client: class 0 has 100 samples, too few for the 101 clients that hold it",
        ),
        (
            {"scheme": "pathological", "num_clients": 11, "classes_per_client": 1, "min_size": 90},
            "partition.min_size: cannot be met: the smallest client holds 50 samples (min_size 90)",
        ),
        (
            {"scheme": "pathological-ish"},
            "partition.scheme: unknown scheme 'pathological-ish'; "
            "expected one of: dirichlet, iid, pathological (did you mean 'pathological'?)",
        ),
    ],
)
def test_impossible_settings_name_the_field_and_what_is_accepted(kwargs: dict[str, Any], expected: str) -> None:
    # Prepare
    settings: dict[str, Any] = {"num_clients": 4, "rng": np.random.default_rng(0), **kwargs}

    # Execute
    with pytest.raises(ConfigError) as caught:
        partition(LABELS, **settings)

    # Assert
    assert str(caught.value).startswith(expected)
    assert "\n" not in str(caught.value)


def test_dirichlet_gives_up_on_an_unreachable_min_size_after_bounded_draws() -> None:
    # Prepare: 1 sample of one class and 99 of another; at tiny alpha each class goes to one client
    labels = np.array([0] + [1] * 99)

    # Execute
    with pytest.raises(ConfigError) as caught:
        dirichlet_partition(labels, 2, alpha=1e-4, rng=np.random.default_rng(0), min_size=40)

    # Assert
    assert caught.value.field == "partition.min_size"
    assert f"no Dirichlet draw out of {MAX_DIRICHLET_DRAWS}" in caught.value.message


def test_non_integer_labels_are_a_programming_error() -> None:
    # Prepare
    labels = np.zeros(10)

    # Execute
    with pytest.raises(TypeError) as caught:
        dirichlet_partition(labels, 2, alpha=1.0, rng=np.random.default_rng(0))

    # Assert
    assert "labels must be a 1-D integer array" in str(caught.value)
