"""CIFAR-10 and CIFAR-100 in their published Python format (``cifar-10-batches-py``, ``cifar-100-python``).

Each file of the published archives is a pickled dict: ``data`` (``uint8`` of
shape ``(n, 3072)``, the red, green then blue planes of 32x32 images) and the
labels (``labels`` for CIFAR-10, ``fine_labels`` for CIFAR-100). A pickle can
run code when loaded, so these files are read by an unpickler that builds
only what the format holds (dicts, lists, bytes, strings, numbers and NumPy
arrays) and refuses anything else on one line naming the file.
"""

from __future__ import annotations

import io
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from fedmosaic.data.arrays import ArrayDataset, DatasetSplits
from fedmosaic.data.sources import read_data_file, require_file
from fedmosaic.errors import FedmosaicError

CIFAR_URL = "https://www.cs.toronto.edu/~kriz/cifar.html"
SIDE = 32
"""Height and width of every image."""
_ARRAY_GLOBALS = frozenset(
    {
        ("numpy.core.multiarray", "_reconstruct"),
        ("numpy._core.multiarray", "_reconstruct"),
        ("numpy", "ndarray"),
        ("numpy", "dtype"),
        ("numpy.core.multiarray", "scalar"),
        ("numpy._core.multiarray", "scalar"),
        ("_codecs", "encode"),
    }
)
"""The only globals the CIFAR pickles refer to: what NumPy needs to rebuild an array (and, in a file
pickled by Python 3 at protocol 2, the codec that turns its latin-1 text back into the array's bytes)."""


@dataclass(frozen=True)
class CifarLayout:
    """Where one CIFAR dataset's files are and what its labels are called.

    Parameters
    ----------
    name : str
        Name of the dataset (``"cifar-10"``).
    folder : str
        The published archive's folder inside the data directory.
    train : tuple of str
        Its training files, in order.
    test : str
        Its test file.
    labels : str
        The key of the labels in each file.
    num_classes : int
        Number of classes.
    """

    name: str
    folder: str
    train: tuple[str, ...]
    test: str
    labels: str
    num_classes: int


CIFAR10 = CifarLayout(
    "cifar-10", "cifar-10-batches-py", tuple(f"data_batch_{k}" for k in range(1, 6)), "test_batch", "labels", 10
)
CIFAR100 = CifarLayout("cifar-100", "cifar-100-python", ("train",), "test", "fine_labels", 100)


class _ArraysOnly(pickle.Unpickler):
    """An unpickler that rebuilds NumPy arrays and plain containers, and refuses every other global."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _ARRAY_GLOBALS:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"refers to {module}.{name}, which a CIFAR file never holds")


def read_cifar_file(path: Path, layout: CifarLayout) -> ArrayDataset:
    """One CIFAR file's images, as float32 ``(n, 3, 32, 32)`` in ``[0, 1]``, and labels.

    Raises
    ------
    FedmosaicError
        If the file is not a CIFAR pickle of that layout (naming the file and why).

    Examples
    --------
    >>> import pickle, tempfile
    >>> path = Path(tempfile.mkdtemp()) / "test_batch"
    >>> batch = {b"data": np.zeros((2, 3072), np.uint8), b"labels": [3, 7], b"batch_label": b"testing batch 1 of 1"}
    >>> _ = path.write_bytes(pickle.dumps(batch))
    >>> images = read_cifar_file(path, CIFAR10)
    >>> images.x.shape, images.y.tolist()
    ((2, 3, 32, 32), [3, 7])
    """
    try:
        content = _ArraysOnly(io.BytesIO(read_data_file(path)), encoding="bytes").load()
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError) as error:
        raise FedmosaicError(f"corrupt CIFAR file {path}: {error}") from None
    if not isinstance(content, dict):
        raise FedmosaicError(f"corrupt CIFAR file {path}: holds a {type(content).__name__}, not a dict of batches")
    data, labels = content.get(b"data"), content.get(layout.labels.encode())
    if not isinstance(data, np.ndarray) or data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != 3 * SIDE**2:
        raise FedmosaicError(f"corrupt CIFAR file {path}: 'data' is not uint8 rows of {3 * SIDE**2} values")
    if labels is None or len(labels) != len(data):
        raise FedmosaicError(f"corrupt CIFAR file {path}: '{layout.labels}' does not hold one label per image")
    y = np.asarray(labels, dtype=np.int64)
    if len(y) and (y.min() < 0 or y.max() >= layout.num_classes):
        raise FedmosaicError(f"corrupt CIFAR file {path}: a label is outside 0..{layout.num_classes - 1}")
    x = data.reshape(len(data), 3, SIDE, SIDE).astype(np.float32) / 255.0
    return ArrayDataset(x, y, num_classes=layout.num_classes)


def load_cifar_splits(data_dir: Path, *, layout: CifarLayout, how_chosen: str, source_url: str) -> DatasetSplits:
    """The published train and test splits of a CIFAR dataset in ``data_dir / layout.folder``.

    Raises
    ------
    DataFileMissing
        Naming the first absent file, where it was searched and where the dataset is published.
    FedmosaicError
        If a file is corrupt.
    """
    found = [
        require_file(data_dir, f"{layout.folder}/{name}", how_chosen=how_chosen, source_url=source_url)
        for name in (*layout.train, layout.test)
    ]
    parts = [read_cifar_file(path, layout) for path in found]
    train = ArrayDataset(
        np.concatenate([p.x for p in parts[:-1]]), np.concatenate([p.y for p in parts[:-1]]), layout.num_classes
    )
    return DatasetSplits(train, parts[-1], layout.name)
