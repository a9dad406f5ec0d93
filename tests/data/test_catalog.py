"""Specification of loading datasets by name."""

from pathlib import Path

import numpy as np
import pytest

from fedmosaic.data.catalog import DATASETS, load_dataset
from fedmosaic.errors import ConfigError, DataFileMissing

SHARED_DATA = Path(__file__).resolve().parents[3] / "shared" / "data"


def test_the_catalog_lists_the_six_datasets() -> None:
    # Prepare: nothing

    # Execute
    names = DATASETS

    # Assert
    assert names == ("cifar-10", "cifar-100", "digits", "fashion-mnist", "isolet", "mnist")


@pytest.mark.parametrize(
    ("name", "sample_shape", "num_classes", "sizes"),
    [
        ("mnist", (1, 28, 28), 10, (12, 5)),
        ("fashion-mnist", (1, 28, 28), 10, (12, 5)),
        ("isolet", (617,), 26, (4, 3)),
    ],
)
def test_file_datasets_are_read_from_the_given_folder(
    fake_data_dir: Path, name: str, sample_shape: tuple[int, ...], num_classes: int, sizes: tuple[int, int]
) -> None:
    # Prepare: fake_data_dir holds tiny copies of every file dataset

    # Execute
    splits = load_dataset(name, data_dir=fake_data_dir)

    # Assert
    assert splits.name == name
    assert splits.train.x.shape[1:] == sample_shape
    assert splits.train.num_classes == num_classes
    assert (len(splits.train), len(splits.test)) == sizes


def test_the_environment_variable_points_at_the_data(fake_data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Prepare
    monkeypatch.setenv("FEDMOSAIC_DATA", str(fake_data_dir))

    # Execute
    splits = load_dataset("mnist")

    # Assert
    assert splits.test.y.tolist() == [0, 1, 2, 3, 4]


def test_a_missing_dataset_says_where_it_was_looked_for_and_where_to_get_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Prepare
    monkeypatch.setenv("FEDMOSAIC_DATA", str(tmp_path))

    # Execute
    with pytest.raises(DataFileMissing) as caught:
        load_dataset("fashion-mnist")

    # Assert
    assert str(caught.value) == (
        f"data file not found: fashion-mnist/train-images-idx3-ubyte.gz (searched {tmp_path} "
        "(chosen by FEDMOSAIC_DATA); the dataset is published at "
        "https://github.com/zalandoresearch/fashion-mnist)"
    )


def test_digits_need_no_data_folder_and_follow_the_seed(tmp_path: Path) -> None:
    # Prepare: an empty data folder

    # Execute
    first, again = load_dataset("digits", data_dir=tmp_path, seed=5), load_dataset("digits", seed=5)

    # Assert
    assert first.name == "digits"
    np.testing.assert_array_equal(first.test.y, again.test.y)


@pytest.mark.parametrize(
    ("name", "suggestion"),
    [
        ("cifar10", " (did you mean 'cifar-10'?)"),
        ("svhn", ""),
        ("mnsit", " (did you mean 'mnist'?)"),
        ("fashion_mnist", " (did you mean 'fashion-mnist'?)"),
    ],
)
def test_an_unknown_name_lists_the_accepted_ones(name: str, suggestion: str) -> None:
    # Prepare: the parameters

    # Execute
    with pytest.raises(ConfigError) as caught:
        load_dataset(name)

    # Assert
    assert caught.value.field == "data.dataset"
    assert str(caught.value) == (
        f"data.dataset: unknown dataset '{name}'; expected one of: cifar-10, cifar-100, digits, fashion-mnist, isolet, mnist{suggestion}"
    )


@pytest.mark.skipif(not SHARED_DATA.is_dir(), reason=f"real datasets not found at {SHARED_DATA}")
def test_real_mnist_is_read_through_the_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    # Prepare
    monkeypatch.setenv("FEDMOSAIC_DATA", str(SHARED_DATA))

    # Execute
    splits = load_dataset("mnist")

    # Assert: the published sizes and test-label counts of MNIST
    assert splits.train.x.shape == (60000, 1, 28, 28)
    assert splits.test.x.shape == (10000, 1, 28, 28)
    assert splits.test.x.min() == 0.0
    assert splits.test.x.max() == 1.0
    assert np.bincount(splits.test.y).tolist() == [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]
