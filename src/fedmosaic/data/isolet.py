"""The UCI ISOLET spoken-letter dataset, stored as comma-separated text."""

import io
from pathlib import Path

import numpy as np

from fedmosaic.data.arrays import ArrayDataset, DatasetSplits
from fedmosaic.data.sources import read_data_file, require_file
from fedmosaic.errors import FedmosaicError

NUM_FEATURES = 617
NUM_CLASSES = 26
_SPLIT_STEMS = {"train": "isolet1+2+3+4", "test": "isolet5"}


def parse_isolet(text: str, *, source: str) -> ArrayDataset:
    r"""Decode ISOLET rows: 617 comma-separated features, then the class ``1.``..``26.``.

    The text is parsed by pandas' C reader (about three times faster than :func:`numpy.loadtxt`, which
    gives the same float32 values on the published files), to float64 first, then cast.

    Parameters
    ----------
    text : str
        The file content, one sample a line.
    source : str
        Where the text comes from, named in errors.

    Returns
    -------
    ArrayDataset
        Features as float32 of shape ``(n, 617)``, labels 0..25 as int64.

    Raises
    ------
    FedmosaicError
        If a value is not a number, a line does not hold 618 values (an
        empty or ``nan`` value counts as missing), or a class is not one of
        ``1.``..``26.``.

    Examples
    --------
    >>> line = ", ".join(["0.5"] * 617) + ", 26."
    >>> data = parse_isolet(line + "\n", source="example")
    >>> data.x.shape, data.y.tolist()
    ((1, 617), [25])
    """
    import pandas as pd  # half a second to import: imported where ISOLET is read

    try:  # a malformed value, a line longer than the first and an empty file are ValueErrors
        table = pd.read_csv(io.StringIO(text), header=None, dtype=np.float64, skipinitialspace=True).to_numpy()
    except ValueError as error:
        raise FedmosaicError(f"corrupt ISOLET file {source}: {str(error).splitlines()[0]}") from error
    if table.shape[1] != NUM_FEATURES + 1:
        raise FedmosaicError(
            f"corrupt ISOLET file {source}: expected {NUM_FEATURES + 1} values a line "
            f"(617 features then the class), got {table.shape[1]}"
        )
    missing = np.isnan(table).any(axis=1)  # pandas fills a line shorter than the first with NaN
    if missing.any():
        raise FedmosaicError(
            f"corrupt ISOLET file {source}: line {int(np.argmax(missing)) + 1} has fewer than "
            f"{NUM_FEATURES + 1} values, or an empty or 'nan' one"
        )
    classes = table[:, -1]
    valid = (classes == np.round(classes)) & (classes >= 1) & (classes <= NUM_CLASSES)
    if not valid.all():
        row = int(np.argmin(valid))
        raise FedmosaicError(
            f"corrupt ISOLET file {source}: class on line {row + 1} is {classes[row]}; expected 1. to {NUM_CLASSES}."
        )
    features = np.ascontiguousarray(table[:, :NUM_FEATURES], dtype=np.float32)
    return ArrayDataset(features, classes.astype(np.int64) - 1, NUM_CLASSES)


def load_isolet_splits(data_dir: Path, *, how_chosen: str, source_url: str) -> DatasetSplits:
    """Load ISOLET: ``isolet1+2+3+4`` to train on (6238 rows), ``isolet5`` to test (1559 rows).

    Each file is looked for as ``<data_dir>/isolet/<stem>.data.gz``, then
    uncompressed as ``<stem>.data``.

    Parameters
    ----------
    data_dir : Path
        The data directory.
    how_chosen : str
        How ``data_dir`` was chosen, named when a file is missing.
    source_url : str
        Where the dataset is published, named when a file is missing.

    Returns
    -------
    DatasetSplits
        Named ``"isolet"``; features float32 of shape ``(n, 617)``, labels 0..25.

    Raises
    ------
    DataFileMissing
        If a file is absent in both forms.
    FedmosaicError
        If a file is corrupt.

    Examples
    --------
    >>> from pathlib import Path
    >>> load_isolet_splits(Path("/nowhere"), how_chosen="FEDMOSAIC_DATA", source_url="uci")
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    fedmosaic.errors.DataFileMissing: data file not found: isolet/isolet1+2+3+4.data.gz or ...
    """
    files = {
        split: require_file(
            data_dir,
            f"isolet/{stem}.data.gz",
            alternatives=(f"isolet/{stem}.data",),
            how_chosen=how_chosen,
            source_url=source_url,
        )
        for split, stem in _SPLIT_STEMS.items()
    }
    return DatasetSplits(train=_read_isolet(files["train"]), test=_read_isolet(files["test"]), name="isolet")


def _read_isolet(path: Path) -> ArrayDataset:
    try:
        text = read_data_file(path).decode("ascii")
    except UnicodeDecodeError as error:
        raise FedmosaicError(f"corrupt ISOLET file {path}: it is not text ({error.reason})") from error
    return parse_isolet(text, source=str(path))
