"""What a loaded model accepts as input, and the one-line errors for what it does not."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fedmosaic.models.card import ModelFileError
from fedmosaic.models.inputs import checked_inputs, input_schema, read_inputs

FLAT = input_schema(["a", "b", "c"], (3,), "none")
IMAGE = input_schema([f"pixel{k}" for k in range(4)], (1, 2, 2), "none")


def test_a_frame_is_read_by_column_name_whatever_the_order() -> None:
    frame = pd.DataFrame({"c": [3], "a": [1.0], "b": [2]})
    assert checked_inputs(frame, FLAT).tolist() == [[1.0, 2.0, 3.0]]


def test_images_are_accepted_flat_or_shaped() -> None:
    flat = np.arange(8, dtype=np.float64).reshape(2, 4)
    assert checked_inputs(flat, IMAGE).shape == (2, 1, 2, 2)
    assert np.array_equal(checked_inputs(flat.reshape(2, 1, 2, 2), IMAGE), checked_inputs(flat, IMAGE))


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        (
            pd.DataFrame({"a": [1.0], "b": [2.0]}),
            "inputs: missing columns ['c'] (the model reads 3 columns: ['a', 'b', 'c'])",
        ),
        (pd.DataFrame({"a": [1.0], "b": [2.0], "c": [3.0], "d": [4.0]}), "inputs: unexpected columns ['d']"),
        (pd.DataFrame({"a": [1.0], "b": ["x"], "c": [3.0]}), "inputs: column 'b' has dtype str, expected numbers"),
        (np.zeros((2, 4)), "inputs: expected 3 columns per row (shape (n, 3)), got shape (2, 4)"),
        (np.array([["1", "2", "3"]]), "inputs: dtype <U1, expected numbers"),
        (np.zeros((0, 3)), "inputs: no rows"),
        (np.array([[1.0, np.nan, 3.0]]), "inputs: row 0, column 'b': nan is not a finite number"),
    ],
    ids=["missing-column", "extra-column", "text-column", "wrong-width", "wrong-dtype", "no-rows", "nan"],
)
def test_bad_inputs_are_one_line_errors_naming_what_is_expected(inputs, message: str) -> None:
    with pytest.raises(ModelFileError) as error:
        checked_inputs(inputs, FLAT)
    assert str(error.value).startswith(message)
    assert "\n" not in str(error.value)


def test_nan_is_accepted_where_the_schema_gives_it_a_meaning() -> None:
    schema = input_schema(["a", "b"], (2,), "none", missing="absent")
    assert np.isnan(checked_inputs(np.array([[1.0, np.nan]]), schema)[0, 1])


@pytest.mark.parametrize("suffix", [".npy", ".csv", ".parquet"])
def test_every_input_file_type_reads_back_the_same_numbers(tmp_path: Path, suffix: str) -> None:
    # Prepare
    values = np.random.default_rng(0).normal(size=(4, 3)).astype(np.float32)
    path = tmp_path / f"x{suffix}"
    frame = pd.DataFrame(values, columns=["a", "b", "c"])
    if suffix == ".npy":
        np.save(path, values)
    elif suffix == ".csv":
        frame.to_csv(path, index=False)
    else:
        frame.to_parquet(path)
    # Execute
    read = checked_inputs(read_inputs(path), FLAT)
    # Assert
    np.testing.assert_array_equal(read, values)


def test_unreadable_input_files_are_one_line_errors(tmp_path: Path) -> None:
    (tmp_path / "x.parquet").write_text("not parquet")
    with pytest.raises(
        ModelFileError, match=r"x.txt: unsupported input file type '.txt' \(accepted: .npy, .npz, .csv, .parquet\)"
    ):
        read_inputs(tmp_path / "x.txt")
    with pytest.raises(ModelFileError, match="no such input file"):
        read_inputs(tmp_path / "x.csv")
    with pytest.raises(ModelFileError, match=r"cannot read \.parquet input"):
        read_inputs(tmp_path / "x.parquet")
