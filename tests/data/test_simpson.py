"""Specification of the Simpson-MNIST generator."""

from pathlib import Path

import numpy as np
import pytest

from fedmosaic.data.arrays import ArrayDataset, DatasetSplits
from fedmosaic.data.catalog import load_dataset
from fedmosaic.data.simpson import (
    DARK,
    DIGITS,
    LIGHT,
    SimpsonSplits,
    coarsened,
    one_shares,
    rule_shades,
    shade_colour,
    shade_label_correlation,
    simpson_mnist,
)
from fedmosaic.errors import ConfigError, FedmosaicError

SHARED_DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
SMALL = {
    "num_clients": 5,
    "samples_per_client": 40,
    "pretrain_samples": 50,
    "validation_samples": 20,
    "design": "bands",
}
CONFLICTING = {"num_clients": 5, "samples_per_client": 40, "pretrain_samples": 50, "validation_samples": 20}


def fake_digits(counts: dict[int, int], rng: np.random.Generator) -> ArrayDataset:
    """Random greyscale 28x28 "digits": ``counts[d]`` images labelled ``d``, shuffled."""
    labels = rng.permutation(np.repeat(list(counts), list(counts.values())))
    images = rng.random((len(labels), 1, 28, 28), dtype=np.float32)
    return ArrayDataset(images, labels.astype(np.int64), num_classes=10)


def fake_mnist(train_sevens: int = 200, test_digits: int = 400) -> DatasetSplits:
    """A small MNIST stand-in: 200 1s and ``train_sevens`` 7s to train, among other digits."""
    rng = np.random.default_rng(0)
    others = {digit: 10 for digit in range(10) if digit not in DIGITS}
    train = fake_digits({1: 200, 7: train_sevens, **others}, rng)
    test = fake_digits({1: test_digits, 7: test_digits, **others}, rng)
    return DatasetSplits(train=train, test=test, name="fake-mnist")


@pytest.fixture(scope="module")
def mnist() -> DatasetSplits:
    return fake_mnist()


@pytest.fixture(scope="module")
def splits(mnist: DatasetSplits) -> SimpsonSplits:
    return simpson_mnist(mnist, seed=0, **SMALL)


def pooled(splits: SimpsonSplits) -> tuple[np.ndarray, np.ndarray]:
    """Shades and labels of all clients together."""
    return np.concatenate(splits.shades), np.concatenate([client.y for client in splits.clients])


def all_datasets(splits: SimpsonSplits) -> list[ArrayDataset]:
    return [*splits.clients, splits.test, splits.pretrain]


def test_every_dataset_is_rgb_binary_with_the_requested_sizes(splits: SimpsonSplits) -> None:
    # Prepare: splits of 5 clients x 40 samples, 50 pretraining samples, 400 + 400 test digits

    # Execute
    sizes = [len(data) for data in all_datasets(splits)]

    # Assert
    assert sizes == [40] * 5 + [800, 50]
    for data in all_datasets(splits):
        assert data.x.dtype == np.float32
        assert data.x.shape[1:] == (3, 28, 28)
        assert data.y.dtype == np.int64
        assert set(data.y.tolist()) == {0, 1}
        assert data.num_classes == 2
        assert data.x.min() >= 0.0
        assert data.x.max() <= 1.0
    assert [len(shades) for shades in splits.shades] == [40] * 5
    assert (len(splits.test_shades), len(splits.pretrain_shades)) == (800, 50)


def test_labels_are_digit_1_as_0_and_digit_7_as_1(mnist: DatasetSplits, splits: SimpsonSplits) -> None:
    # Prepare
    parts = [
        *zip(splits.clients, splits.sources, strict=True),
        (splits.pretrain, splits.pretrain_sources),
    ]

    # Execute
    train_digits = [mnist.train.y[rows] for _, rows in parts]
    test_digits = mnist.test.y[splits.test_sources]

    # Assert
    for (data, _), digits in zip(parts, train_digits, strict=True):
        np.testing.assert_array_equal(digits, np.array(DIGITS)[data.y])
    np.testing.assert_array_equal(test_digits, np.array(DIGITS)[splits.test.y])
    np.testing.assert_array_equal(splits.test_sources, np.flatnonzero(np.isin(mnist.test.y, DIGITS)))


def test_each_image_is_its_greyscale_digit_times_the_colour_of_its_shade(
    mnist: DatasetSplits, splits: SimpsonSplits
) -> None:
    # Prepare
    client, rows, shades = splits.clients[2], splits.sources[2], splits.shades[2]

    # Execute
    expected = mnist.train.x[rows] * shade_colour(shades)[:, :, None, None]

    # Assert
    np.testing.assert_array_equal(client.x, expected)


def test_a_coarse_resolution_tints_the_block_averaged_digit(mnist: DatasetSplits) -> None:
    # Execute
    coarse = simpson_mnist(mnist, seed=0, resolution=7, **SMALL)
    full = simpson_mnist(mnist, seed=0, **SMALL)

    # Assert: same rows and shades, only the digit's detail changes
    client, rows, shades = coarse.clients[1], coarse.sources[1], coarse.shades[1]
    np.testing.assert_array_equal(rows, full.sources[1])
    expected = coarsened(mnist.train.x[rows], 7) * shade_colour(shades)[:, :, None, None]
    np.testing.assert_array_equal(client.x, expected)
    assert not np.array_equal(client.x, full.clients[1].x)


def test_coarsening_averages_blocks_and_repeats_them() -> None:
    # Prepare: a 4x4 image made of four constant 2x2 blocks, plus noise inside each block
    blocks = np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32)
    image = np.kron(blocks, np.ones((2, 2), dtype=np.float32))
    image += np.array([[0.1, -0.1, 0.2, -0.2]] * 4, dtype=np.float32)

    # Execute
    result = coarsened(image[None, None], 2)

    # Assert
    assert result.shape == (1, 1, 4, 4)
    assert result.dtype == np.float32
    np.testing.assert_allclose(result[0, 0], np.kron(blocks, np.ones((2, 2))), atol=1e-6)
    np.testing.assert_array_equal(coarsened(image[None, None], 4), image[None, None])


def test_the_colour_ramp_goes_from_dark_to_light_in_every_channel() -> None:
    # Prepare
    shades = np.linspace(0.0, 1.0, 11)

    # Execute
    colours = shade_colour(shades)

    # Assert
    np.testing.assert_allclose(colours[0], DARK)
    np.testing.assert_allclose(colours[-1], LIGHT)
    np.testing.assert_allclose(colours[5], (DARK + LIGHT) / 2, rtol=1e-6)
    assert np.all(np.diff(colours, axis=0) > 0)


def test_client_k_holds_band_k_with_its_share_of_1s(splits: SimpsonSplits) -> None:
    # Prepare
    shares = one_shares(5)

    # Execute
    bands = [(shades.min(), shades.max()) for shades in splits.shades]
    share_of_ones = [float(np.mean(client.y == 0)) for client in splits.clients]

    # Assert
    np.testing.assert_allclose(shares, [0.1, 0.3, 0.5, 0.7, 0.9])
    for k, (low, high) in enumerate(bands):
        assert k / 5 <= low
        assert high < (k + 1) / 5
    np.testing.assert_allclose(share_of_ones, np.rint(shares * 40) / 40)


def test_within_every_client_the_1s_are_darker_than_the_7s(splits: SimpsonSplits) -> None:
    # Prepare: splits of 5 clients

    # Execute
    correlations = [
        shade_label_correlation(shades, client.y) for shades, client in zip(splits.shades, splits.clients, strict=True)
    ]

    # Assert
    for shades, client in zip(splits.shades, splits.clients, strict=True):
        assert shades[client.y == 0].max() < shades[client.y == 1].min()
        assert shades[client.y == 0].mean() < shades[client.y == 1].mean()
    assert min(correlations) > 0.5


def test_pooled_over_clients_the_trend_is_reversed(splits: SimpsonSplits) -> None:
    # Prepare
    shades, labels = pooled(splits)

    # Execute
    correlation = shade_label_correlation(shades, labels)

    # Assert: lighter means 1 (label 0) once the clients are pooled
    assert correlation < -0.3
    assert shades[labels == 0].mean() > shades[labels == 1].mean()


def test_pretraining_and_pooled_test_samples_show_the_pooled_reversal(splits: SimpsonSplits) -> None:
    # Prepare: splits with test_colours="pooled"

    # Execute
    pretrain = shade_label_correlation(splits.pretrain_shades, splits.pretrain.y)
    test = shade_label_correlation(splits.test_shades, splits.test.y)

    # Assert
    assert pretrain < -0.3
    assert test < -0.3
    assert np.mean(splits.pretrain.y == 0) == 0.5


def test_independent_test_colours_do_not_depend_on_the_label(mnist: DatasetSplits) -> None:
    # Prepare: 800 test digits

    # Execute
    splits = simpson_mnist(mnist, seed=0, test_colours="independent", **SMALL)

    # Assert
    assert abs(shade_label_correlation(splits.test_shades, splits.test.y)) < 0.1
    assert splits.test_shades.min() >= 0.0
    assert splits.test_shades.max() < 1.0
    counts = np.histogram(splits.test_shades, bins=5, range=(0.0, 1.0))[0]
    assert counts.min() > 0.7 * len(splits.test_shades) / 5


def test_pretraining_and_validation_rows_are_disjoint_from_client_rows(splits: SimpsonSplits) -> None:
    # Prepare: splits of 5 x 40 client samples, 50 pretraining and 20 validation samples

    # Execute
    rows = np.concatenate([*splits.sources, splits.pretrain_sources, splits.validation_sources])

    # Assert: 270 distinct training rows; the validation set is half 1s, with its own colour swap
    assert len(np.unique(rows)) == len(rows) == 270
    assert np.mean(splits.validation.y == 0) == 0.5
    np.testing.assert_array_equal(splits.validation_swap.own.y, splits.validation.y)


def test_no_pretraining_sample_is_allowed(mnist: DatasetSplits) -> None:
    # Prepare: nothing

    # Execute
    splits = simpson_mnist(
        mnist, seed=0, num_clients=3, samples_per_client=10, pretrain_samples=0, validation_samples=0
    )

    # Assert
    assert splits.pretrain.x.shape == (0, 3, 28, 28)
    assert len(splits.pretrain_shades) == len(splits.pretrain_sources) == 0


def test_the_same_seed_gives_the_same_data_and_another_seed_other_data(mnist: DatasetSplits) -> None:
    # Prepare: nothing

    # Execute
    first, again, other = (simpson_mnist(mnist, seed=seed, **SMALL) for seed in (3, 3, 4))

    # Assert
    for left, right in zip(all_datasets(first), all_datasets(again), strict=True):
        np.testing.assert_array_equal(left.x, right.x)
        np.testing.assert_array_equal(left.y, right.y)
    np.testing.assert_array_equal(first.test_shades, again.test_shades)
    assert not np.array_equal(first.sources[0], other.sources[0])
    assert not np.array_equal(first.clients[0].x, other.clients[0].x)
    assert not np.array_equal(first.test_shades, other.test_shades)


def test_the_correlation_is_pearsons(splits: SimpsonSplits) -> None:
    # Prepare
    shades, labels = pooled(splits)

    # Execute
    correlation = shade_label_correlation(shades, labels)

    # Assert
    assert correlation == pytest.approx(np.corrcoef(shades, labels)[0, 1])


@pytest.mark.parametrize(
    ("shades", "labels"),
    [([0.1, 0.2], [0, 1, 1]), ([0.3, 0.3, 0.3], [0, 1, 1]), ([0.1, 0.2, 0.3], [1, 1, 1])],
    ids=["lengths-differ", "constant-shade", "constant-label"],
)
def test_an_undefined_correlation_is_an_error(shades: list[float], labels: list[int]) -> None:
    # Prepare
    arrays = np.array(shades), np.array(labels)

    # Execute / Assert
    with pytest.raises(FedmosaicError):
        shade_label_correlation(*arrays)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"num_clients": 1}, "simpson.num_clients: must be >= 2"),
        ({"samples_per_client": 9}, "simpson.samples_per_client: must be >= 10"),
        ({"pretrain_samples": -1}, "simpson.pretrain_samples: must be >= 0"),
        ({"validation_samples": -1}, "simpson.validation_samples: must be >= 0"),
        ({"resolution": 0}, "simpson.resolution: must be from 1 to the image side 28"),
        ({"resolution": 29}, "simpson.resolution: must be from 1 to the image side 28"),
        ({"test_colours": "pool"}, "simpson.test_colours: .*independent, pooled .*did you mean 'pooled'"),
        ({"samples_per_client": 100}, "simpson.samples_per_client: .*need 285 training images of digit 1"),
    ],
)
def test_invalid_parameters_are_config_errors(mnist: DatasetSplits, options: dict[str, object], message: str) -> None:
    # Prepare
    arguments = {**SMALL, **options}

    # Execute / Assert
    with pytest.raises(ConfigError, match=message):
        simpson_mnist(mnist, seed=0, **arguments)


def test_too_few_sevens_is_a_config_error() -> None:
    # Prepare: 100 sevens, while 5 x 40 samples, 50 pretraining and 20 validation samples need 135
    mnist = fake_mnist(train_sevens=100)

    # Execute / Assert
    with pytest.raises(ConfigError, match="need 135 training images of digit 7 but 'fake-mnist' has 100"):
        simpson_mnist(mnist, seed=0, **SMALL)


def test_colour_images_are_rejected(mnist: DatasetSplits) -> None:
    # Prepare
    rgb = ArrayDataset(np.repeat(mnist.train.x, 3, axis=1), mnist.train.y, num_classes=10)

    # Execute / Assert
    with pytest.raises(FedmosaicError, match=r"greyscale images of shape \(n, 1, H, W\)"):
        simpson_mnist(DatasetSplits(rgb, rgb, "rgb"), seed=0, **SMALL)


def test_a_test_split_without_sevens_is_rejected(mnist: DatasetSplits) -> None:
    # Prepare
    no_sevens = mnist.test.subset(np.flatnonzero(mnist.test.y != 7))

    # Execute / Assert
    with pytest.raises(FedmosaicError, match="needs digit 7 in the test split"):
        simpson_mnist(DatasetSplits(mnist.train, no_sevens, "no-sevens"), seed=0, **SMALL)


@pytest.mark.skipif(not (SHARED_DATA / "mnist").is_dir(), reason="MNIST is not in the shared data folder")
def test_on_real_mnist_every_client_shows_the_local_trend_and_the_pool_the_reverse() -> None:
    # Prepare
    mnist = load_dataset("mnist", data_dir=SHARED_DATA)

    # Execute
    splits = simpson_mnist(mnist, seed=0, design="bands")

    # Assert: the defaults, 5 x 1000 client samples, 1000 pretraining, all 2163 test 1s and 7s
    assert [len(client) for client in splits.clients] == [1000] * 5
    assert (len(splits.pretrain), len(splits.test)) == (1000, 2163)
    within = [
        shade_label_correlation(shades, client.y) for shades, client in zip(splits.shades, splits.clients, strict=True)
    ]
    assert min(within) > 0.6
    assert shade_label_correlation(*pooled(splits)) < -0.35
    assert shade_label_correlation(splits.test_shades, splits.test.y) < -0.35


# The conflicting design (the default): a colour rule per client, neighbours disagree, pooled reversed.

D = 1 / 6
"""Shade step of the conflicting design for 5 clients: 1 / (K + 1)."""


@pytest.fixture(scope="module")
def conflicting(mnist: DatasetSplits) -> SimpsonSplits:
    return simpson_mnist(mnist, seed=0, **CONFLICTING)


def test_conflicting_within_every_client_colour_separates_the_digits(conflicting: SimpsonSplits) -> None:
    # Prepare: 5 clients of 40 samples, d = 1/6

    # Execute
    ones = [shades[client.y == 0] for shades, client in zip(conflicting.shades, conflicting.clients, strict=True)]
    sevens = [shades[client.y == 1] for shades, client in zip(conflicting.shades, conflicting.clients, strict=True)]

    # Assert: client k's 1s in [k/6, (k+1)/6), its 7s in [(k+1)/6, (k+2)/6): threshold (k+1)/6 is perfect
    for k in range(5):
        assert k * D <= ones[k].min()
        assert ones[k].max() < (k + 1) * D
        assert (k + 1) * D <= sevens[k].min()
        assert sevens[k].max() < (k + 2) * D
    assert [len(o) for o in ones] == [4, 12, 20, 28, 36]


def test_conflicting_neighbouring_clients_read_the_same_shades_the_other_way(conflicting: SimpsonSplits) -> None:
    # Prepare
    labels = [client.y for client in conflicting.clients]

    # Execute: for each shade interval [(k+1)/6, (k+2)/6), the labels client k and client k+1 give it
    shared = []
    for k in range(4):
        low, high = (k + 1) * D, (k + 2) * D
        inside = [(shades >= low) & (shades < high) for shades in conflicting.shades[k : k + 2]]
        shared.append((set(labels[k][inside[0]].tolist()), set(labels[k + 1][inside[1]].tolist())))

    # Assert: in client k that interval holds only 7s, in client k+1 only 1s
    assert shared == [({1}, {0})] * 4


def test_conflicting_pooled_the_trend_is_reversed(conflicting: SimpsonSplits) -> None:
    # Prepare
    shades, labels = pooled(conflicting)

    # Execute
    correlation = shade_label_correlation(shades, labels)
    within = [shade_label_correlation(s, c.y) for s, c in zip(conflicting.shades, conflicting.clients, strict=True)]

    # Assert: about -0.24 pooled (the population value for 5 equal clients is -0.242), positive within
    assert -0.32 < correlation < -0.16
    assert shades[labels == 0].mean() > shades[labels == 1].mean()
    assert min(within) > 0.6


@pytest.mark.parametrize(("clients", "expected"), [(2, 0.233), (3, -0.049), (5, -0.242)])
def test_conflicting_pooled_correlation_of_the_population(clients: int, expected: float) -> None:
    # Prepare: a large population, shares exact, so the correlation is the design's own
    n = 200_000
    rng = np.random.default_rng(0)
    client = np.repeat(np.arange(clients), n)
    labels = np.concatenate([(np.arange(n) >= round(share * n)).astype(np.int64) for share in one_shares(clients)])

    # Execute
    shades = rule_shades(client, labels, clients, "conflicting", rng.random(len(labels)))

    # Assert: at 2 clients the pooled trend is not reversed, from 3 on it is
    assert shade_label_correlation(shades, labels) == pytest.approx(expected, abs=0.005)


def test_conflicting_refuses_fewer_than_three_clients(mnist: DatasetSplits) -> None:
    # Execute / Assert
    with pytest.raises(ConfigError, match=r"simpson\.num_clients: must be >= 3 for the 'conflicting' design"):
        simpson_mnist(mnist, seed=0, num_clients=2, samples_per_client=10, pretrain_samples=0, validation_samples=0)


def test_an_unknown_design_is_a_config_error(mnist: DatasetSplits) -> None:
    # Execute / Assert
    with pytest.raises(ConfigError, match=r"simpson\.design: .*did you mean 'bands'"):
        simpson_mnist(mnist, seed=0, design="band", **CONFLICTING)


def test_conflicting_test_and_pretraining_shades_do_not_depend_on_the_label(conflicting: SimpsonSplits) -> None:
    # Execute
    test = shade_label_correlation(conflicting.test_shades, conflicting.test.y)
    pretrain = shade_label_correlation(conflicting.pretrain_shades, conflicting.pretrain.y)

    # Assert: independent shades by default, uniform on [0, 1)
    assert abs(test) < 0.1
    assert abs(pretrain) < 0.3
    for shades in (conflicting.test_shades, conflicting.pretrain_shades):
        assert shades.min() >= 0.0
        assert shades.max() < 1.0


def test_conflicting_pooled_test_colours_follow_the_pooled_law(mnist: DatasetSplits) -> None:
    # Execute
    splits = simpson_mnist(mnist, seed=0, test_colours="pooled", **CONFLICTING)

    # Assert
    assert shade_label_correlation(splits.test_shades, splits.test.y) < -0.15


@pytest.mark.parametrize("options", [CONFLICTING, SMALL])
def test_the_colour_swap_keeps_the_digits_and_swaps_only_the_shades(mnist: DatasetSplits, options: dict) -> None:
    # Prepare
    splits = simpson_mnist(mnist, seed=0, **options)
    swap = splits.colour_swap
    step = D if options is CONFLICTING else 1 / 10

    # Execute
    grey = mnist.test.x[splits.test_sources]

    # Assert: the same digits and labels, tinted at the own class's shade, then the other class's
    np.testing.assert_array_equal(swap.own.y, splits.test.y)
    np.testing.assert_array_equal(swap.swapped.y, splits.test.y)
    np.testing.assert_array_equal(swap.own.x, grey * shade_colour(swap.own_shades)[:, :, None, None])
    np.testing.assert_array_equal(swap.swapped.x, grey * shade_colour(swap.swapped_shades)[:, :, None, None])
    moved = swap.swapped_shades - swap.own_shades
    np.testing.assert_allclose(moved[splits.test.y == 0], step)
    np.testing.assert_allclose(moved[splits.test.y == 1], -step)


@pytest.mark.skipif(not (SHARED_DATA / "mnist").is_dir(), reason="MNIST is not in the shared data folder")
def test_on_real_mnist_the_conflicting_design_shows_its_three_facts() -> None:
    # Prepare
    mnist = load_dataset("mnist", data_dir=SHARED_DATA)

    # Execute
    splits = simpson_mnist(mnist, seed=0)
    shades, labels = pooled(splits)

    # Assert: perfect separation within, reversal pooled (-0.246 on seed 0), independent test shades
    for k, (s, client) in enumerate(zip(splits.shades, splits.clients, strict=True)):
        assert s[client.y == 0].max() < (k + 1) * D <= s[client.y == 1].min()
    assert shade_label_correlation(shades, labels) == pytest.approx(-0.246, abs=0.01)
    assert abs(shade_label_correlation(splits.test_shades, splits.test.y)) < 0.05
