"""Specification of the IDX reader and the MNIST-style loader."""

import gzip
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from fedmosaic.data.idx import load_idx_splits, parse_idx, read_idx
from fedmosaic.errors import DataFileMissing, FedmosaicError

WriteIdx = Callable[[Path, np.ndarray], Path]


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int16, np.int32, np.float32, np.float64])
def test_read_idx_returns_values_and_shape_of_any_type(tmp_path: Path, write_idx: WriteIdx, dtype: type) -> None:
    # Prepare
    values: np.ndarray = (np.arange(24).reshape(2, 3, 4) - 5).astype(dtype)
    path = write_idx(tmp_path / "values.gz", values)

    # Execute
    read = read_idx(path)

    # Assert
    assert read.dtype == np.dtype(dtype)
    assert read.dtype.isnative
    np.testing.assert_array_equal(read, values)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b"\x01\x00\x08\x01\x00\x00\x00\x01\x07", "does not start with the IDX magic number"),
        (b"\x00\x00", "does not start with the IDX magic number"),
        (b"\x00\x00\x07\x01\x00\x00\x00\x01\x07", "unknown type code 0x07; expected one of: 0x08, 0x09"),
        (b"\x00\x00\x08\x02\x00\x00\x00\x01", "header of 2 dimensions is incomplete"),
        (b"\x00\x00\x08\x00", "header of 0 dimensions is incomplete"),
        (
            b"\x00\x00\x08\x01\x00\x00\x00\x03\x07",
            "announces shape (3,) (11 bytes) but the file holds 9 bytes",
        ),
    ],
)
def test_corrupt_idx_is_reported_in_one_line(raw: bytes, expected: str) -> None:
    # Prepare: the parameters

    # Execute
    with pytest.raises(FedmosaicError) as caught:
        parse_idx(raw, source="x.gz")

    # Assert
    assert str(caught.value).startswith("corrupt IDX file x.gz: ")
    assert expected in str(caught.value)
    assert "\n" not in str(caught.value)


def write_split(folder: Path, write_idx: WriteIdx, prefix: str, images: np.ndarray, labels: np.ndarray) -> None:
    write_idx(folder / f"{prefix}-images-idx3-ubyte.gz", images)
    write_idx(folder / f"{prefix}-labels-idx1-ubyte.gz", labels)


def test_images_are_scaled_to_unit_range_with_a_channel_axis(tmp_path: Path, write_idx: WriteIdx) -> None:
    # Prepare
    images = np.array([[[0, 255], [51, 102]]] * 3, dtype=np.uint8)
    write_split(tmp_path / "toy", write_idx, "train", images, np.array([3, 0, 9], np.uint8))
    write_split(tmp_path / "toy", write_idx, "t10k", images[:1], np.array([7], np.uint8))

    # Execute
    splits = load_idx_splits(tmp_path, name="toy", folder="toy", how_chosen="--data-dir", source_url="u")

    # Assert
    assert splits.name == "toy"
    assert splits.train.x.dtype == np.float32
    assert splits.train.x.shape == (3, 1, 2, 2)
    np.testing.assert_allclose(splits.train.x[0, 0], [[0.0, 1.0], [0.2, 0.4]], rtol=1e-6)
    assert splits.train.y.dtype == np.int64
    assert splits.train.y.tolist() == [3, 0, 9]
    assert splits.test.y.tolist() == [7]
    assert splits.train.num_classes == 10


@pytest.mark.parametrize(
    ("images", "labels", "expected"),
    [
        (np.zeros((3, 2, 2), np.uint8), np.zeros(2, np.uint8), "expected 3 unsigned-byte labels"),
        (np.zeros((3, 4), np.uint8), np.zeros(3, np.uint8), "expected unsigned-byte images of shape"),
        (np.zeros((3, 2, 2), np.int16), np.zeros(3, np.uint8), "expected unsigned-byte images of shape"),
        (np.zeros((3, 2, 2), np.uint8), np.full(3, 10, np.uint8), "labels must lie in 0..9 (got 10)"),
    ],
)
def test_mismatched_images_and_labels_are_reported_with_the_file(
    tmp_path: Path, write_idx: WriteIdx, images: np.ndarray, labels: np.ndarray, expected: str
) -> None:
    # Prepare
    write_split(tmp_path / "toy", write_idx, "train", images, labels)
    write_split(tmp_path / "toy", write_idx, "t10k", np.zeros((1, 2, 2), np.uint8), np.zeros(1, np.uint8))

    # Execute
    with pytest.raises(FedmosaicError) as caught:
        load_idx_splits(tmp_path, name="toy", folder="toy", how_chosen="--data-dir", source_url="u")

    # Assert
    assert expected in str(caught.value)
    assert str(tmp_path / "toy") in str(caught.value)


def test_a_missing_test_file_is_reported_before_anything_is_read(tmp_path: Path, write_idx: WriteIdx) -> None:
    # Prepare: a train split, and a train images file that is not even gzip
    write_split(tmp_path / "toy", write_idx, "train", np.zeros((1, 2, 2), np.uint8), np.zeros(1, np.uint8))
    (tmp_path / "toy" / "train-images-idx3-ubyte.gz").write_bytes(b"garbage")

    # Execute
    with pytest.raises(DataFileMissing) as caught:
        load_idx_splits(tmp_path, name="toy", folder="toy", how_chosen="--data-dir", source_url="https://x")

    # Assert
    assert caught.value.path == "toy/t10k-images-idx3-ubyte.gz"
    assert caught.value.searched == f"{tmp_path} (chosen by --data-dir)"
    assert caught.value.source == "https://x"


def test_a_truncated_gzip_idx_file_is_reported(tmp_path: Path) -> None:
    # Prepare
    path = tmp_path / "cut.gz"
    path.write_bytes(gzip.compress(bytes([0, 0, 8, 1, 0, 0, 0, 50]) + bytes(50))[:-12])

    # Execute
    with pytest.raises(FedmosaicError) as caught:
        read_idx(path)

    # Assert
    assert str(caught.value).startswith(f"corrupt gzip file {path}")
