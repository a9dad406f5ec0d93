"""One run per output folder: an operating-system lock held for the run's life.

The lock is ``fcntl.flock`` on :data:`LOCK_FILE` inside the folder. The
operating system releases it when the process ends, however it ends: a run
killed with SIGKILL leaves the file behind but not the lock, so the next run
(or ``--resume``) takes it at once. Two runs started together into one folder
cannot both hold it: the second is refused on one line before it writes
anything.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from fedmosaic.errors import ConfigError, FedmosaicError

LOCK_FILE = ".fedmosaic.lock"
"""The file locked in an output folder (it holds the id of the process that locked it last)."""


@contextmanager
def locked_folder(folder: Path, field: str = "--out") -> Iterator[None]:
    """Hold the lock of ``folder`` (created if needed) while the block runs.

    Parameters
    ----------
    folder : Path
        The output folder.
    field : str, default "--out"
        The option named when the folder is taken or cannot be created.

    Raises
    ------
    ConfigError
        If another process holds the folder's lock, or the folder is a file.
    FedmosaicError
        If the folder or its lock file cannot be created.

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp()) / "run"
    >>> with locked_folder(folder):
    ...     try:
    ...         with locked_folder(folder):
    ...             pass
    ...     except ConfigError as error:
    ...         print(error.field, "is in use by another run" in str(error))
    --out True
    """
    if folder.exists() and not folder.is_dir():
        raise ConfigError(field, f"{folder} exists and is not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handle = open(folder / LOCK_FILE, "a+")  # noqa: SIM115 - held open for the block's life
    except OSError as error:
        raise FedmosaicError(f"{field}: cannot write in {folder}: {error.strerror or error}") from None
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "unknown"
            raise ConfigError(
                field, f"{folder} is in use by another run (process {holder}); wait for it or choose another folder"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        yield
    finally:
        handle.close()
