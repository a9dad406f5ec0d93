"""Specification of the vertical (feature) partitioners."""

import math
from collections.abc import Callable

import numpy as np
import pytest

from fedmosaic.data.vertical import dirichlet_column_blocks, even_column_blocks, image_patch_blocks
from fedmosaic.errors import ConfigError


def assert_partition_of(blocks: list[np.ndarray], num_columns: int) -> None:
    """Blocks are non-empty, sorted int64 arrays that together hold every column once."""
    assert all(len(block) > 0 for block in blocks)
    assert all(block.dtype == np.int64 and np.all(np.diff(block) > 0) for block in blocks)
    np.testing.assert_array_equal(np.sort(np.concatenate(blocks)), np.arange(num_columns))


def largest_share(blocks: list[np.ndarray]) -> float:
    sizes = np.array([len(block) for block in blocks])
    return float(sizes.max() / sizes.sum())


def test_even_blocks_are_contiguous_and_near_equal() -> None:
    # Prepare: nothing

    # Execute
    blocks = even_column_blocks(10, 3)

    # Assert
    assert_partition_of(blocks, 10)
    assert [block.tolist() for block in blocks] == [[0, 1, 2, 3], [4, 5, 6], [7, 8, 9]]


@pytest.mark.parametrize("alpha", [math.inf, 1.0, 0.01])
def test_dirichlet_blocks_cover_all_columns_and_no_party_is_empty(alpha: float) -> None:
    # Prepare
    rng = np.random.default_rng(0)

    # Execute
    blocks = dirichlet_column_blocks(50, 8, alpha, rng)

    # Assert
    assert len(blocks) == 8
    assert_partition_of(blocks, 50)


def test_infinite_alpha_gives_balanced_parties() -> None:
    # Prepare
    rng = np.random.default_rng(0)

    # Execute
    blocks = dirichlet_column_blocks(1000, 4, math.inf, rng)

    # Assert
    assert all(abs(len(block) - 250) <= 50 for block in blocks)


def test_small_alpha_gives_unbalanced_parties() -> None:
    # Prepare
    rngs = [np.random.default_rng(seed) for seed in range(20)]

    # Execute
    small = [largest_share(dirichlet_column_blocks(617, 4, 0.1, rng)) for rng in rngs[:10]]
    large = [largest_share(dirichlet_column_blocks(617, 4, 100.0, rng)) for rng in rngs[10:]]

    # Assert: a balanced split of 4 parties has a largest share near 0.25
    assert np.mean(small) > 0.6
    assert np.mean(large) < 0.35


def test_importance_sets_the_expected_share_of_each_party() -> None:
    # Prepare
    rng = np.random.default_rng(0)

    # Execute
    blocks = dirichlet_column_blocks(2000, 2, math.inf, rng, importance=[3.0, 1.0])

    # Assert
    assert abs(len(blocks[0]) / 2000 - 0.75) < 0.05


def test_the_same_seed_gives_the_same_blocks() -> None:
    # Prepare
    first_rng, again_rng = np.random.default_rng(4), np.random.default_rng(4)

    # Execute
    first = dirichlet_column_blocks(100, 5, 0.5, first_rng)
    again = dirichlet_column_blocks(100, 5, 0.5, again_rng)

    # Assert
    assert all(np.array_equal(a, b) for a, b in zip(first, again, strict=True))


@pytest.mark.parametrize(
    ("num_parties", "grid"),
    [(2, (1, 2)), (4, (2, 2)), (6, (2, 3)), (8, (2, 4))],
)
def test_image_patches_form_a_near_square_grid_of_rectangles(num_parties: int, grid: tuple[int, int]) -> None:
    # Prepare
    height, width = 28, 28

    # Execute
    patches = image_patch_blocks(height, width, num_parties)

    # Assert
    assert_partition_of(patches, height * width)
    owner = np.empty(height * width, dtype=np.int64)
    for party, patch in enumerate(patches):
        owner[patch] = party
    owner_map = owner.reshape(height, width)
    rows, cols = grid
    centre_rows = ((np.arange(rows) + 0.5) * height / rows).astype(int)
    centre_cols = ((np.arange(cols) + 0.5) * width / cols).astype(int)
    cell_centres = np.ix_(centre_rows, centre_cols)
    np.testing.assert_array_equal(owner_map[cell_centres], np.arange(num_parties).reshape(rows, cols))
    for patch in patches:
        r, c = np.divmod(patch, width)
        assert len(patch) == (r.max() - r.min() + 1) * (c.max() - c.min() + 1)


def test_two_patches_are_the_left_and_right_halves() -> None:
    # Prepare: a 2x4 image numbered 0..7 row by row

    # Execute
    patches = image_patch_blocks(2, 4, 2)

    # Assert
    assert [patch.tolist() for patch in patches] == [[0, 1, 4, 5], [2, 3, 6, 7]]


RANGE = "vertical.num_parties: must be >= 1 and <= the number of features"
EVEN = "vertical.num_parties: must be an even number >= 2 for image patches"
IMPORTANCE = "vertical.importance: must be 2 finite numbers > 0, one per party"
ALPHA = "vertical.alpha: must be > 0, or inf for equal weights"


@pytest.mark.parametrize(
    ("function", "args", "expected"),
    [
        (even_column_blocks, (5, 0), f"{RANGE}, 5 (got 0)"),
        (even_column_blocks, (5, 6), f"{RANGE}, 5 (got 6)"),
        (image_patch_blocks, (28, 28, 3), f"{EVEN} (got 3)"),
        (image_patch_blocks, (28, 28, 0), f"{EVEN} (got 0)"),
        (
            image_patch_blocks,
            (1, 3, 8),
            "vertical.num_parties: a 2x4 grid of patches does not fit a 1x3 image (got 8)",
        ),
    ],
)
def test_impossible_layouts_name_the_field_and_what_is_accepted(
    function: Callable[..., list[np.ndarray]], args: tuple[int, ...], expected: str
) -> None:
    # Prepare: the parameters

    # Execute
    with pytest.raises(ConfigError) as caught:
        function(*args)

    # Assert
    assert str(caught.value) == expected


@pytest.mark.parametrize(
    ("num_features", "num_parties", "alpha", "importance", "expected"),
    [
        (3, 4, 1.0, None, f"{RANGE}, 3 (got 4)"),
        (10, 2, 0.0, None, f"{ALPHA} (got 0.0)"),
        (10, 2, math.nan, None, f"{ALPHA} (got nan)"),
        (10, 2, 1.0, [1.0], f"{IMPORTANCE} (got [1.0])"),
        (10, 2, 1.0, [1.0, 0.0], f"{IMPORTANCE} (got [1.0, 0.0])"),
    ],
)
def test_invalid_dirichlet_settings_name_the_field_and_what_is_accepted(
    num_features: int, num_parties: int, alpha: float, importance: list[float] | None, expected: str
) -> None:
    # Prepare
    rng = np.random.default_rng(0)

    # Execute
    with pytest.raises(ConfigError) as caught:
        dirichlet_column_blocks(num_features, num_parties, alpha, rng, importance)

    # Assert
    assert str(caught.value) == expected
