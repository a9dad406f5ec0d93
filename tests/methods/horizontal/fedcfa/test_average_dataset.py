"""Chunk means on the client and the global average dataset on the server."""

import numpy as np
import pytest

from fedmosaic.methods.horizontal.fedcfa.average_dataset import chunk_indices, chunk_means, global_average_dataset


def _data(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, 2, 3)).astype(np.float32), rng.integers(0, 4, size=n)


@pytest.mark.parametrize(("n", "chunk_size", "expected"), [(100, 16, 6), (96, 16, 6), (15, 16, 1), (0, 16, 0)])
def test_chunk_count_is_floor_n_over_chunk_size_or_one_for_a_small_client(
    n: int, chunk_size: int, expected: int
) -> None:
    # Prepare
    x, y = _data(n)
    # Execute
    means = chunk_means(x, y, 4, np.random.default_rng(1), chunk_size=chunk_size)
    # Assert
    assert means["chunk_x"].shape == (expected, 2, 3)
    assert means["chunk_y"].shape == (expected, 4)
    assert means["chunk_x"].dtype == means["chunk_y"].dtype == np.float32


def test_chunk_means_are_the_means_of_shuffled_chunks_and_the_rest_is_dropped() -> None:
    # Prepare
    x, y = _data(50)
    order = np.random.default_rng(7).permutation(50)
    # Execute
    means = chunk_means(x, y, 4, np.random.default_rng(7), chunk_size=16)
    # Assert
    for c in range(3):
        rows = order[16 * c : 16 * (c + 1)]
        np.testing.assert_allclose(means["chunk_x"][c], x[rows].mean(axis=0), rtol=1e-6)
        np.testing.assert_allclose(means["chunk_y"][c], np.bincount(y[rows], minlength=4) / 16)


def test_num_chunks_cuts_every_sample_into_b_nearly_equal_chunks() -> None:
    # Prepare
    x, y = _data(50)
    # Execute
    chunks = chunk_indices(50, np.random.default_rng(3), chunk_size=16, num_chunks=4)
    means = chunk_means(x, y, 4, np.random.default_rng(3), chunk_size=16, num_chunks=4)
    few = chunk_means(x[:3], y[:3], 4, np.random.default_rng(3), chunk_size=16, num_chunks=4)
    # Assert
    assert [len(c) for c in chunks] == [13, 13, 12, 12]
    assert sorted(np.concatenate(chunks).tolist()) == list(range(50))
    sizes = np.array([13, 13, 12, 12])
    np.testing.assert_allclose(np.average(means["chunk_x"], axis=0, weights=sizes), x.mean(axis=0), atol=1e-6)
    assert len(few["chunk_x"]) == 3, "at most one chunk per sample"


def test_without_a_size_every_chunk_mean_is_broadcast_in_client_order() -> None:
    # Prepare
    uploads = [chunk_means(*_data(n, seed=n), 4, np.random.default_rng(n), chunk_size=8) for n in (24, 17, 9)]
    # Execute
    average = global_average_dataset(uploads, np.random.default_rng(0))
    # Assert
    assert average["avg_x"].shape == (3 + 2 + 1, 2, 3)
    np.testing.assert_array_equal(average["avg_x"], np.concatenate([u["chunk_x"] for u in uploads]))
    np.testing.assert_array_equal(average["avg_y"], np.concatenate([u["chunk_y"] for u in uploads]))


def test_a_size_b_broadcasts_b_unweighted_means_of_shuffled_groups_of_chunk_means() -> None:
    # Prepare: 7 chunk means with distinct one-hot-like labels
    upload = {"chunk_x": np.arange(7, dtype=np.float32)[:, None], "chunk_y": np.eye(7, dtype=np.float32)}
    groups = np.array_split(np.random.default_rng(5).permutation(7), 3)
    # Execute
    average = global_average_dataset([upload], np.random.default_rng(5), size=3)
    # Assert
    assert average["avg_x"].shape == (3, 1)
    for row, group in enumerate(groups):
        assert average["avg_x"][row, 0] == pytest.approx(group.mean())
        np.testing.assert_allclose(average["avg_y"][row], np.isin(np.arange(7), group) / len(group))


def test_fewer_means_than_b_keeps_each_mean() -> None:
    # Prepare
    upload = {"chunk_x": np.ones((2, 1), np.float32), "chunk_y": np.eye(2, dtype=np.float32)}
    # Execute
    average = global_average_dataset([upload], np.random.default_rng(0), size=5)
    # Assert
    assert average["avg_x"].shape == (2, 1)


def test_no_chunk_mean_gives_no_average_dataset() -> None:
    # Prepare
    empty = {"chunk_x": np.zeros((0, 2), np.float32), "chunk_y": np.zeros((0, 3), np.float32)}
    # Execute / Assert
    assert global_average_dataset([], np.random.default_rng(0)) == {}
    assert global_average_dataset([empty], np.random.default_rng(0)) == {}
