"""CIFAR-10 and CIFAR-100 from files in their published Python format, and nothing but arrays unpickled."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest

from fedmosaic.data.catalog import load_dataset
from fedmosaic.data.cifar import CIFAR10, read_cifar_file
from fedmosaic.errors import DataFileMissing, FedmosaicError


def _batch(n: int, labels_key: bytes, rng: np.random.Generator, classes: int) -> dict[bytes, object]:
    """A batch as the published files hold it: bytes keys, uint8 rows of 3072 values, a list of labels."""
    return {
        b"batch_label": b"training batch",
        labels_key: rng.integers(0, classes, n).tolist(),
        b"data": rng.integers(0, 256, (n, 3072), dtype=np.uint8),
        b"filenames": [f"img_{k}.png".encode() for k in range(n)],
    }


def _write(path: Path, content: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(content, protocol=2))  # the published files are protocol-2 pickles


@pytest.fixture
def cifar_dir(tmp_path: Path) -> Path:
    """Both archives' folders with tiny files: CIFAR-10 five batches of 4 and a test batch of 3, CIFAR-100 6 and 2."""
    rng = np.random.default_rng(0)
    for k in range(1, 6):
        _write(tmp_path / "cifar-10-batches-py" / f"data_batch_{k}", _batch(4, b"labels", rng, 10))
    _write(tmp_path / "cifar-10-batches-py" / "test_batch", _batch(3, b"labels", rng, 10))
    for name, n in (("train", 6), ("test", 2)):
        batch = _batch(n, b"fine_labels", rng, 100) | {b"coarse_labels": [0] * n}
        _write(tmp_path / "cifar-100-python" / name, batch)
    return tmp_path


@pytest.mark.parametrize(("name", "classes", "sizes"), [("cifar-10", 10, (20, 3)), ("cifar-100", 100, (6, 2))])
def test_the_published_layout_gives_images_classes_and_splits(
    cifar_dir: Path, name: str, classes: int, sizes: tuple[int, int]
) -> None:
    # Execute
    splits = load_dataset(name, data_dir=cifar_dir)

    # Assert
    assert splits.name == name
    assert (len(splits.train), len(splits.test)) == sizes
    assert splits.train.x.shape[1:] == (3, 32, 32)
    assert splits.train.x.dtype == np.float32
    assert 0.0 <= splits.train.x.min() <= splits.train.x.max() <= 1.0
    assert splits.train.num_classes == classes


def test_an_image_s_row_is_its_red_green_and_blue_planes(tmp_path: Path) -> None:
    # Prepare: one image whose red plane is 255, green 0, blue 51
    row = np.concatenate([np.full(1024, 255), np.zeros(1024), np.full(1024, 51)]).astype(np.uint8)
    _write(tmp_path / "test_batch", {b"data": row[None], b"labels": [4]})

    # Execute
    image = read_cifar_file(tmp_path / "test_batch", CIFAR10).x[0]

    # Assert
    assert image.shape == (3, 32, 32)
    assert image[:, 5, 7].tolist() == pytest.approx([1.0, 0.0, 0.2])


def test_a_missing_file_names_it_and_where_the_dataset_is_published(tmp_path: Path) -> None:
    # Execute
    with pytest.raises(DataFileMissing) as caught:
        load_dataset("cifar-10", data_dir=tmp_path)

    # Assert
    assert str(caught.value).startswith("data file not found: cifar-10-batches-py/data_batch_1 (searched ")
    assert str(caught.value).endswith("the dataset is published at https://www.cs.toronto.edu/~kriz/cifar.html)")


class Hostile:
    """Unpickling it would run ``print``: a file that is not what the format holds."""

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (print, ("code ran",))


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (
            Hostile(),
            "refers to __builtin__.print, which a CIFAR file never holds",
        ),  # protocol 2 names Python 2's module
        ({b"data": np.zeros((2, 10), np.uint8), b"labels": [0, 1]}, "'data' is not uint8 rows of 3072 values"),
        ({b"data": np.zeros((2, 3072), np.uint8), b"labels": [0]}, "'labels' does not hold one label per image"),
        ({b"data": np.zeros((1, 3072), np.uint8), b"labels": [10]}, "a label is outside 0..9"),
        ([1, 2], "holds a list, not a dict of batches"),
    ],
)
def test_a_corrupt_or_hostile_file_is_one_line_and_runs_no_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: object, expected: str
) -> None:
    # Prepare
    _write(tmp_path / "test_batch", content)

    # Execute
    with pytest.raises(FedmosaicError) as caught:
        read_cifar_file(tmp_path / "test_batch", CIFAR10)

    # Assert
    assert str(caught.value) == f"corrupt CIFAR file {tmp_path / 'test_batch'}: {expected}"
    assert "code ran" not in capsys.readouterr().out
