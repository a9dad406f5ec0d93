"""Specification of the ISOLET reader."""

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from fedmosaic.data.isolet import load_isolet_splits, parse_isolet
from fedmosaic.errors import DataFileMissing, FedmosaicError

IsoletText = Callable[[np.ndarray, np.ndarray], str]
WriteIsolet = Callable[[Path, np.ndarray, np.ndarray], Path]
URL = "https://archive.ics.uci.edu/dataset/54/isolet"


def test_rows_become_float32_features_and_zero_based_labels(isolet_text: IsoletText) -> None:
    # Prepare
    features = np.random.default_rng(0).uniform(-1, 1, size=(3, 617))
    text = isolet_text(features, np.array([1, 26, 13]))

    # Execute
    data = parse_isolet(text, source="rows")

    # Assert
    assert data.x.dtype == np.float32
    assert data.x.shape == (3, 617)
    np.testing.assert_allclose(data.x, features, atol=1e-4)
    assert data.y.dtype == np.int64
    assert data.y.tolist() == [0, 25, 12]
    assert data.num_classes == 26


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("0.1, 0.2, 3.\n", "expected 618 values a line (617 features then the class), got 3"),
        (", ".join(["0.5"] * 617) + ", 27.\n", "class on line 1 is 27.0; expected 1. to 26."),
        (", ".join(["0.5"] * 617) + ", 0.\n", "class on line 1 is 0.0"),
        (", ".join(["0.5"] * 617) + ", 2.5\n", "class on line 1 is 2.5"),
        (", ".join(["0.5"] * 617) + ", x\n", "could not convert string to float: 'x'"),
        (", ".join(["0.5"] * 617) + ", 1.\n0.5, 2.\n", "line 2 has fewer than 618 values, or an empty or 'nan' one"),
        (", ".join(["0.5"] * 617) + ", nan\n", "line 1 has fewer than 618 values, or an empty or 'nan' one"),
        (
            ", ".join(["0.5"] * 617) + ", 1.\n" + ", ".join(["0.5"] * 619) + "\n",
            "Expected 618 fields in line 2, saw 619",
        ),
        ("", "No columns to parse from file"),
    ],
)
def test_malformed_rows_are_reported_in_one_line(line: str, expected: str) -> None:
    # Prepare: the parameters

    # Execute
    with pytest.raises(FedmosaicError) as caught:
        parse_isolet(line, source="rows")

    # Assert
    assert str(caught.value).startswith("corrupt ISOLET file rows: ")
    assert expected in str(caught.value)
    assert "\n" not in str(caught.value)


def test_compressed_and_plain_files_are_both_read(tmp_path: Path, write_isolet: WriteIsolet) -> None:
    # Prepare: train compressed, test only uncompressed
    features = np.zeros((2, 617))
    write_isolet(tmp_path / "isolet" / "isolet1+2+3+4.data.gz", features, np.array([1, 2]))
    write_isolet(tmp_path / "isolet" / "isolet5.data", features[:1], np.array([5]))

    # Execute
    splits = load_isolet_splits(tmp_path, how_chosen="--data-dir", source_url=URL)

    # Assert
    assert splits.name == "isolet"
    assert splits.train.y.tolist() == [0, 1]
    assert splits.test.y.tolist() == [4]


def test_a_file_missing_in_both_forms_names_both(tmp_path: Path, write_isolet: WriteIsolet) -> None:
    # Prepare
    write_isolet(tmp_path / "isolet" / "isolet1+2+3+4.data.gz", np.zeros((1, 617)), np.array([1]))

    # Execute
    with pytest.raises(DataFileMissing) as caught:
        load_isolet_splits(tmp_path, how_chosen="FEDMOSAIC_DATA", source_url=URL)

    # Assert
    assert caught.value.path == "isolet/isolet5.data.gz or isolet/isolet5.data"
    assert caught.value.source == URL


def test_a_binary_file_is_reported_as_corrupt(tmp_path: Path) -> None:
    # Prepare
    folder = tmp_path / "isolet"
    folder.mkdir()
    (folder / "isolet1+2+3+4.data").write_bytes(b"\xff\xfe")
    (folder / "isolet5.data").write_bytes(b"\xff\xfe")

    # Execute
    with pytest.raises(FedmosaicError) as caught:
        load_isolet_splits(tmp_path, how_chosen="--data-dir", source_url=URL)

    # Assert
    train_file = folder / "isolet1+2+3+4.data"
    assert str(caught.value).startswith(f"corrupt ISOLET file {train_file}: it is not text")
