"""The inputs a loaded model accepts: checking arrays and tables against the card's schema, reading and writing files.

The card's ``inputs`` section names the columns (one per feature, in order),
the shape of one example, the dtype and the scaling the data had in
training. Arrays are accepted as ``(n, columns)`` or ``(n, *shape)``;
DataFrames must have exactly the card's columns (in any order).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fedmosaic.data.csv_rows import read_csv
from fedmosaic.models.card import ModelFileError

READERS = (".npy", ".npz", ".csv", ".parquet")
"""File types :func:`read_inputs` reads."""


def input_schema(
    columns: list[str],
    shape: tuple[int, ...],
    scaling: str,
    *,
    missing: str | None = None,
    standardise: tuple[list[float], list[float]] | None = None,
) -> dict[str, Any]:
    """The card's ``inputs`` section.

    Parameters
    ----------
    columns : list of str
        One name per feature, in the model's order.
    shape : tuple of int
        Shape of one example (its size is ``len(columns)``).
    scaling : str
        How the features were scaled in training (inputs must be scaled alike).
    missing : str or None, default None
        What NaN means, where the model accepts it (vertical models: an absent party).
    standardise : (mean, std) or None, default None
        Per-column mean and standard deviation the model applies to raw inputs
        itself (sites' own tables: the federated scaling); inputs are then
        given unscaled.

    Examples
    --------
    >>> input_schema(["a", "b"], (2,), "none")["dtype"]
    'float32'
    """
    if math.prod(shape) != len(columns):
        raise ValueError(f"shape {shape} does not hold {len(columns)} columns")
    schema: dict[str, Any] = {"columns": list(columns), "shape": list(shape), "dtype": "float32", "scaling": scaling}
    if missing is not None:
        schema["missing"] = missing
    if standardise is not None:
        schema["standardise"] = {"mean": list(standardise[0]), "std": list(standardise[1])}
    return schema


def checked_inputs(inputs: Any, schema: dict[str, Any]) -> np.ndarray:
    """``inputs`` as float32 of shape ``(n, *schema shape)``, after checking them against ``schema``.

    Parameters
    ----------
    inputs : numpy.ndarray or pandas.DataFrame or array-like
        The examples, one per row.
    schema : dict
        The card's ``inputs`` section (:func:`input_schema`).

    Raises
    ------
    ModelFileError
        On missing or extra columns, a wrong width or shape, a dtype that is
        not numeric, no rows, or NaN/infinite values where the model does not
        accept them.

    Examples
    --------
    >>> schema = input_schema(["a", "b"], (2,), "none")
    >>> checked_inputs(pd.DataFrame({"b": [2.0], "a": [1]}), schema).tolist()
    [[1.0, 2.0]]
    >>> checked_inputs(np.zeros((1, 3)), schema)
    Traceback (most recent call last):
    ...
    fedmosaic.models.card.ModelFileError: inputs: expected 2 columns per row (shape (n, 2)), got shape (1, 3)
    """
    columns, shape = list(schema["columns"]), tuple(schema["shape"])
    if isinstance(inputs, pd.DataFrame):
        array = _frame_values(inputs, columns)
    else:
        array = _array_values(np.asarray(inputs), len(columns), shape)
    if len(array) == 0:
        raise ModelFileError("inputs: no rows")
    values = array.astype(np.float32).reshape(len(array), *shape)
    flat = values.reshape(len(values), -1)
    bad = np.isinf(flat) if "missing" in schema else ~np.isfinite(flat)
    if bad.any():
        row, column = (int(k) for k in np.argwhere(bad)[0])
        raise ModelFileError(
            f"inputs: row {row}, column {columns[column]!r}: {flat[row, column]} is not a finite number"
        )
    if "standardise" in schema:
        mean, std = (np.asarray(schema["standardise"][k], dtype=np.float64) for k in ("mean", "std"))
        values = ((flat.astype(np.float64) - mean) / std).astype(np.float32).reshape(values.shape)
    return values


def _frame_values(frame: pd.DataFrame, columns: list[str]) -> np.ndarray:
    names = [str(name) for name in frame.columns]
    missing = [name for name in columns if name not in names]
    extra = [name for name in names if name not in set(columns)]
    if missing:
        raise ModelFileError(
            f"inputs: missing columns {_few(missing)} (the model reads {len(columns)} columns: {_few(columns)})"
        )
    if extra:
        raise ModelFileError(
            f"inputs: unexpected columns {_few(extra)} (the model reads {len(columns)} columns: {_few(columns)})"
        )
    if len(set(names)) < len(names):
        raise ModelFileError(f"inputs: repeated column names {_few(sorted({n for n in names if names.count(n) > 1}))}")
    frame = frame.set_axis(names, axis=1)
    for name in columns:
        if not (pd.api.types.is_numeric_dtype(frame[name]) and not pd.api.types.is_bool_dtype(frame[name])):
            raise ModelFileError(f"inputs: column {name!r} has dtype {frame[name].dtype}, expected numbers (float32)")
    rows: np.ndarray = frame[columns].to_numpy(dtype=np.float64)
    return rows


def _array_values(array: np.ndarray, width: int, shape: tuple[int, ...]) -> np.ndarray:
    if array.dtype.kind not in "fiu":
        raise ModelFileError(f"inputs: dtype {array.dtype}, expected numbers (float32)")
    if array.ndim == 2 and array.shape[1] == width:
        return array
    if array.shape[1:] == shape and array.ndim == len(shape) + 1:
        return array
    expected = f"(n, {width})" + (f" or (n, {', '.join(map(str, shape))})" if len(shape) > 1 else "")
    raise ModelFileError(f"inputs: expected {width} columns per row (shape {expected}), got shape {tuple(array.shape)}")


def _few(names: list[str], limit: int = 6) -> str:
    shown = ", ".join(repr(n) for n in names[:limit])
    return f"[{shown}{', ...' if len(names) > limit else ''}]"


def read_inputs(path: Path) -> np.ndarray | pd.DataFrame:
    """The examples in a ``.npy``, ``.npz`` (its array ``x``, as a site's file), ``.csv`` (with a header row) or ``.parquet`` file.

    Raises
    ------
    ModelFileError
        If the file is missing, of another type, or unreadable.
    """
    suffix = path.suffix.lower()
    if suffix not in READERS:
        raise ModelFileError(
            f"{path}: unsupported input file type {suffix or '(none)'!r} (accepted: {', '.join(READERS)})"
        )
    if not path.is_file():
        raise ModelFileError(f"{path}: no such input file")
    try:
        if suffix in (".npy", ".npz"):
            array = _examples(path)
            if array.ndim == 0:
                raise ValueError("it holds a single value, not rows of examples")
            return array
        if suffix == ".csv":
            return read_csv(path)
        return pd.read_parquet(path)
    except (OSError, ValueError, pd.errors.ParserError, pd.errors.EmptyDataError) as error:
        raise ModelFileError(
            f"{path}: cannot read {suffix} input ({str(error).splitlines()[0] if str(error) else type(error).__name__})"
        ) from None


def _examples(path: Path) -> np.ndarray:
    """A ``.npy`` file's array, or an ``.npz`` file's ``x``; never unpickled."""
    loaded = np.load(path, allow_pickle=False)
    if not isinstance(loaded, np.lib.npyio.NpzFile):
        return np.asarray(loaded)
    with loaded as archive:
        if "x" not in archive.files:
            raise ValueError(
                f"an .npz input holds its examples as the array x, found {', '.join(archive.files) or 'nothing'}"
            )
        return np.asarray(archive["x"])
