"""Where dataset files are looked for, and the error when one is missing."""

import gzip
import os
import zlib
from collections.abc import Sequence
from pathlib import Path

from fedmosaic.errors import DataFileMissing, FedmosaicError

DATA_DIR_ENV = "FEDMOSAIC_DATA"
"""Environment variable naming the data directory when ``--data-dir`` is not given."""


def resolve_data_dir(data_dir: str | Path | None) -> tuple[Path, str]:
    """Choose the folder that holds the dataset files.

    The first of these wins: the explicit argument (the ``--data-dir`` flag),
    the ``FEDMOSAIC_DATA`` environment variable, then the default cache folder
    ``$XDG_CACHE_HOME/fedmosaic/data`` (``~/.cache/fedmosaic/data`` when
    ``XDG_CACHE_HOME`` is unset). Empty strings count as unset. The folder is
    not required to exist.

    Parameters
    ----------
    data_dir : str or Path or None
        The folder the user asked for, if any.

    Returns
    -------
    tuple[Path, str]
        The folder, with ``~`` expanded, and how it was chosen:
        ``"--data-dir"``, ``"FEDMOSAIC_DATA"`` or ``"default cache folder"``.

    Examples
    --------
    >>> resolve_data_dir("/srv/data")
    (PosixPath('/srv/data'), '--data-dir')
    """
    if data_dir is not None and str(data_dir):
        return Path(data_dir).expanduser(), "--data-dir"
    from_env = os.environ.get(DATA_DIR_ENV, "")
    if from_env:
        return Path(from_env).expanduser(), DATA_DIR_ENV
    cache_home = os.environ.get("XDG_CACHE_HOME", "") or "~/.cache"
    return Path(cache_home).expanduser() / "fedmosaic" / "data", "default cache folder"


def require_file(
    data_dir: Path,
    relative: str,
    *,
    how_chosen: str,
    source_url: str,
    alternatives: Sequence[str] = (),
) -> Path:
    """Find a dataset file inside the data directory.

    Parameters
    ----------
    data_dir : Path
        The folder chosen by :func:`resolve_data_dir`.
    relative : str
        The file's path inside ``data_dir``, e.g. ``"mnist/t10k-labels-idx1-ubyte.gz"``.
    how_chosen : str
        How ``data_dir`` was chosen, as returned by :func:`resolve_data_dir`.
    source_url : str
        Where the dataset is published, named in the error.
    alternatives : Sequence[str], optional
        Other accepted paths for the same file, tried in order after ``relative``.

    Returns
    -------
    Path
        The first of ``relative`` and ``alternatives`` that is a file.

    Raises
    ------
    DataFileMissing
        If none of them is a file; the message names the file, the folder
        searched, how that folder was chosen and where to get the dataset.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "notes.txt").write_text("hi")
    >>> require_file(folder, "notes.txt", how_chosen="--data-dir", source_url="-").name
    'notes.txt'
    """
    for candidate in (relative, *alternatives):
        path = data_dir / candidate
        if path.is_file():
            return path
    wanted = " or ".join((relative, *alternatives))
    raise DataFileMissing(wanted, f"{data_dir} (chosen by {how_chosen})", source_url)


def read_data_file(path: Path) -> bytes:
    """Read a dataset file, decompressing it when its name ends in ``.gz``.

    Parameters
    ----------
    path : Path
        A file found by :func:`require_file`.

    Returns
    -------
    bytes
        The (decompressed) content.

    Raises
    ------
    FedmosaicError
        If a ``.gz`` file is not valid gzip or is truncated.

    Examples
    --------
    >>> import gzip, tempfile
    >>> from pathlib import Path
    >>> path = Path(tempfile.mkdtemp()) / "hello.gz"
    >>> _ = path.write_bytes(gzip.compress(b"hello"))
    >>> read_data_file(path)
    b'hello'
    """
    if path.suffix != ".gz":
        return path.read_bytes()
    try:
        return gzip.decompress(path.read_bytes())
    except (gzip.BadGzipFile, EOFError, zlib.error) as error:
        raise FedmosaicError(f"corrupt gzip file {path}: {error}") from error
