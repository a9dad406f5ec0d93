"""Writers of tiny dataset files in the published formats, for the data tests."""

import gzip
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

IDX_TYPE_CODES = {
    np.dtype(np.uint8): 0x08,
    np.dtype(np.int8): 0x09,
    np.dtype(np.int16): 0x0B,
    np.dtype(np.int32): 0x0C,
    np.dtype(np.float32): 0x0D,
    np.dtype(np.float64): 0x0E,
}


def _write_idx(path: Path, values: np.ndarray) -> Path:
    """Write ``values`` as a gzip-compressed IDX file (big-endian, as published)."""
    header = bytes([0, 0, IDX_TYPE_CODES[values.dtype], values.ndim])
    header += np.array(values.shape, dtype=">u4").tobytes()
    body = values.astype(values.dtype.newbyteorder(">")).tobytes()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(header + body))
    return path


def _isolet_text(features: np.ndarray, classes: np.ndarray) -> str:
    """Format rows as the UCI ISOLET files do: features, then the class as `` 1.``..``26.``."""
    return "".join(
        ", ".join(f"{value:.4f}" for value in row) + f", {label}.\n"
        for row, label in zip(features, classes, strict=True)
    )


def _write_isolet(path: Path, features: np.ndarray, classes: np.ndarray) -> Path:
    """Write ISOLET rows, gzip-compressed when ``path`` ends in ``.gz``."""
    content = _isolet_text(features, classes).encode("ascii")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(content) if path.suffix == ".gz" else content)
    return path


@pytest.fixture
def write_idx() -> Callable[[Path, np.ndarray], Path]:
    """Provide a function writing an array as a gzip IDX file."""
    return _write_idx


@pytest.fixture
def isolet_text() -> Callable[[np.ndarray, np.ndarray], str]:
    """Provide a function formatting rows ``(features (n, 617), classes 1..26)`` as ISOLET text."""
    return _isolet_text


@pytest.fixture
def write_isolet() -> Callable[[Path, np.ndarray, np.ndarray], Path]:
    """Provide a function writing ISOLET rows ``(features (n, 617), classes 1..26)`` to a file."""
    return _write_isolet


def _write_mnist_like(folder: Path, rng: np.random.Generator) -> None:
    for prefix, n in (("train", 12), ("t10k", 5)):
        images = rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8)
        images[0] = 255
        _write_idx(folder / f"{prefix}-images-idx3-ubyte.gz", images)
        _write_idx(folder / f"{prefix}-labels-idx1-ubyte.gz", (np.arange(n) % 10).astype(np.uint8))


@pytest.fixture
def fake_data_dir(tmp_path: Path) -> Path:
    """Create a data directory holding tiny MNIST, Fashion-MNIST and ISOLET files.

    MNIST-like sets have 12 train and 5 test images with labels ``i % 10``;
    ISOLET has 4 train rows (compressed) and 3 test rows (uncompressed) with
    classes 1, 2, ... in order.
    """
    rng = np.random.default_rng(0)
    for folder in ("mnist", "fashion-mnist"):
        _write_mnist_like(tmp_path / folder, rng)
    for name, n in (("isolet1+2+3+4.data.gz", 4), ("isolet5.data", 3)):
        features = rng.uniform(-1, 1, size=(n, 617))
        _write_isolet(tmp_path / "isolet" / name, features, np.arange(1, n + 1))
    return tmp_path
