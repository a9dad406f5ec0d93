"""Specification of the splits cache: a grid point's runs sample a network once, and never read stale or torn splits."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fedmosaic.data import bayesnet
from fedmosaic.data.concept_splits import SPLIT_NAMES, ConceptSplits
from fedmosaic.data.splits_cache import CACHE_ENV, cache_folder
from fedmosaic.errors import ConfigError


def _draw(seed: int = 0) -> ConceptSplits:
    return bayesnet.sample_concept_splits("asia", seed=seed, n_samples=100, latent_dim=4, epochs=1)


def _assert_equal(first: ConceptSplits, second: ConceptSplits) -> None:
    for name in SPLIT_NAMES:
        np.testing.assert_array_equal(getattr(first, name).x, getattr(second, name).x)
        np.testing.assert_array_equal(getattr(first, name).concepts, getattr(second, name).concepts)
    facts = ("graph_edges", "task", "inputs", "bayes_optimal_accuracy", "probe_accuracy", "latent_std")
    assert [getattr(first, fact) for fact in facts] == [getattr(second, fact) for fact in facts]
    assert first.train.states == second.train.states


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    return tmp_path


def test_the_same_arguments_read_the_stored_splits_without_sampling_or_reading_the_network(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Prepare
    computed = _draw()

    def never(*args: object, **kwargs: object) -> ConceptSplits:
        raise AssertionError("sampled again or read the network")

    monkeypatch.setattr(bayesnet, "_sample", never)
    monkeypatch.setattr(bayesnet, "load_network", never)

    # Execute
    read = _draw()

    # Assert
    assert len(list(folder.glob("asia-*.npz"))) == 1
    _assert_equal(computed, read)


def test_a_task_the_network_lacks_is_refused_where_splits_are_stored(folder: Path) -> None:
    # Prepare: the default task's splits stored
    _draw()

    # Execute / Assert
    with pytest.raises(ConfigError, match=r"data\.task"):
        bayesnet.sample_concept_splits("asia", seed=0, task="nope", n_samples=100, latent_dim=4, epochs=1)


def test_other_arguments_are_another_file(folder: Path) -> None:
    # Execute
    first, other = _draw(seed=0), _draw(seed=1)

    # Assert
    assert len(list(folder.glob("asia-*.npz"))) == 2
    assert not np.array_equal(first.train.concepts, other.train.concepts)


def test_an_unreadable_file_is_computed_again_and_replaced(folder: Path) -> None:
    # Prepare
    computed = _draw()
    (stored,) = folder.glob("asia-*.npz")
    stored.write_bytes(b"torn")

    # Execute
    again = _draw()

    # Assert
    _assert_equal(computed, again)
    assert stored.stat().st_size > len(b"torn")


def test_off_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Prepare
    monkeypatch.setenv(CACHE_ENV, "off")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))

    # Execute
    _draw()

    # Assert
    assert cache_folder() is None
    assert not any(tmp_path.iterdir())


def test_the_default_folder_is_under_the_user_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Prepare
    monkeypatch.delenv(CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))

    # Execute, Assert
    assert cache_folder() == tmp_path / "fedmosaic" / "splits"
