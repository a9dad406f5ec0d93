"""The IDX format of MNIST and Fashion-MNIST, and the datasets stored in it."""

from pathlib import Path

import numpy as np

from fedmosaic.data.arrays import ArrayDataset, DatasetSplits
from fedmosaic.data.sources import read_data_file, require_file
from fedmosaic.errors import FedmosaicError

_IDX_DTYPES: dict[int, np.dtype] = {
    0x08: np.dtype(">u1"),
    0x09: np.dtype(">i1"),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}
_NUM_CLASSES = 10
_SPLIT_PREFIXES = {"train": "train", "test": "t10k"}


def parse_idx(raw: bytes, *, source: str) -> np.ndarray:
    """Decode the bytes of an IDX file.

    The header is two zero bytes, a type code (``0x08`` unsigned byte,
    ``0x09`` signed byte, ``0x0B`` int16, ``0x0C`` int32, ``0x0D`` float32,
    ``0x0E`` float64), the number of dimensions, then each dimension as a
    big-endian uint32; the big-endian values follow.

    Parameters
    ----------
    raw : bytes
        The uncompressed file content.
    source : str
        Where the bytes come from, named in errors.

    Returns
    -------
    np.ndarray
        The values, in native byte order, with the dimensions of the header
        (read-only when the file holds bytes).

    Raises
    ------
    FedmosaicError
        If the header is malformed or the data length does not match it.

    Examples
    --------
    >>> parse_idx(bytes([0, 0, 0x08, 1, 0, 0, 0, 3, 7, 8, 9]), source="example").tolist()
    [7, 8, 9]
    """
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0:
        raise FedmosaicError(f"corrupt IDX file {source}: it does not start with the IDX magic number")
    dtype = _IDX_DTYPES.get(raw[2])
    if dtype is None:
        raise FedmosaicError(
            f"corrupt IDX file {source}: unknown type code 0x{raw[2]:02x}; "
            f"expected one of: {', '.join(f'0x{code:02x}' for code in _IDX_DTYPES)}"
        )
    ndim = raw[3]
    header_size = 4 + 4 * ndim
    if ndim == 0 or len(raw) < header_size:
        raise FedmosaicError(f"corrupt IDX file {source}: header of {ndim} dimensions is incomplete")
    shape = tuple(int(size) for size in np.frombuffer(raw, ">u4", count=ndim, offset=4))
    expected = header_size + dtype.itemsize * int(np.prod(shape))
    if len(raw) != expected:
        raise FedmosaicError(
            f"corrupt IDX file {source}: header announces shape {shape} "
            f"({expected} bytes) but the file holds {len(raw)} bytes"
        )
    values = np.frombuffer(raw, dtype, offset=header_size).reshape(shape)
    return values.astype(dtype.newbyteorder("="), copy=False)


def read_idx(path: Path) -> np.ndarray:
    """Read an IDX file, gzip-compressed when its name ends in ``.gz``.

    Parameters
    ----------
    path : Path
        The file.

    Returns
    -------
    np.ndarray
        The values, see :func:`parse_idx`.

    Raises
    ------
    FedmosaicError
        If the file is not valid gzip or not valid IDX.

    Examples
    --------
    >>> import gzip, tempfile
    >>> from pathlib import Path
    >>> path = Path(tempfile.mkdtemp()) / "labels-idx1-ubyte.gz"
    >>> _ = path.write_bytes(gzip.compress(bytes([0, 0, 0x08, 1, 0, 0, 0, 2, 4, 2])))
    >>> read_idx(path).tolist()
    [4, 2]
    """
    return parse_idx(read_data_file(path), source=str(path))


def load_idx_splits(data_dir: Path, *, name: str, folder: str, how_chosen: str, source_url: str) -> DatasetSplits:
    """Load an MNIST-style dataset stored as four gzip IDX files.

    The files are ``<folder>/train-images-idx3-ubyte.gz``,
    ``train-labels-idx1-ubyte.gz``, ``t10k-images-idx3-ubyte.gz`` and
    ``t10k-labels-idx1-ubyte.gz`` inside ``data_dir``; images are 8-bit grey
    and labels are 0..9.

    Parameters
    ----------
    data_dir : Path
        The data directory.
    name : str
        Name of the dataset, stored in the result.
    folder : str
        Sub-folder of ``data_dir`` holding the files, e.g. ``"fashion-mnist"``.
    how_chosen : str
        How ``data_dir`` was chosen, named when a file is missing.
    source_url : str
        Where the dataset is published, named when a file is missing.

    Returns
    -------
    DatasetSplits
        Images as float32 in ``[0, 1]`` of shape ``(n, 1, height, width)``,
        labels as int64.

    Raises
    ------
    DataFileMissing
        If one of the four files is absent.
    FedmosaicError
        If a file is corrupt, or images and labels do not match.

    Examples
    --------
    >>> from pathlib import Path
    >>> load_idx_splits(Path("/nowhere"), name="mnist", folder="mnist",
    ...                 how_chosen="--data-dir", source_url="http://yann.lecun.com/exdb/mnist/")
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    fedmosaic.errors.DataFileMissing: data file not found: mnist/train-images-idx3-ubyte.gz (searched ...)
    """
    files = {
        split: [
            require_file(data_dir, f"{folder}/{prefix}-{kind}-ubyte.gz", how_chosen=how_chosen, source_url=source_url)
            for kind in ("images-idx3", "labels-idx1")
        ]
        for split, prefix in _SPLIT_PREFIXES.items()
    }
    return DatasetSplits(train=_image_dataset(*files["train"]), test=_image_dataset(*files["test"]), name=name)


def _image_dataset(images_path: Path, labels_path: Path) -> ArrayDataset:
    images, labels = read_idx(images_path), read_idx(labels_path)
    if images.dtype != np.uint8 or images.ndim != 3:
        raise FedmosaicError(
            f"{images_path}: expected unsigned-byte images of shape (n, height, width) "
            f"(got {images.dtype} of shape {images.shape})"
        )
    if labels.dtype != np.uint8 or labels.ndim != 1 or len(labels) != len(images):
        raise FedmosaicError(
            f"{labels_path}: expected {len(images)} unsigned-byte labels to match {images_path.name} "
            f"(got {labels.dtype} of shape {labels.shape})"
        )
    if len(labels) and labels.max() >= _NUM_CLASSES:
        raise FedmosaicError(f"{labels_path}: labels must lie in 0..{_NUM_CLASSES - 1} (got {labels.max()})")
    x = images[:, np.newaxis].astype(np.float32)
    x /= 255
    return ArrayDataset(x, labels.astype(np.int64), _NUM_CLASSES)
