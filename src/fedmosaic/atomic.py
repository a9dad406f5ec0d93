"""Atomic file writes: write a temporary file, flush it to disk, rename it."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO


def atomic_write(path: Path, write: Callable[[BinaryIO], object]) -> None:
    """Create or replace ``path`` so that readers see the old or the new file, never a torn one.

    Parameters
    ----------
    path : Path
        Destination; its folder is created if needed.
    write : callable (binary file) -> None
        Writes the content.

    Raises
    ------
    OSError
        If the file cannot be written; one raised by the write itself (a full
        disk: ``ENOSPC``) is raised again naming ``path``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> target = pathlib.Path(tempfile.mkdtemp()) / "a.txt"
    >>> atomic_write(target, lambda f: f.write(b"hello"))
    >>> target.read_bytes()
    b'hello'
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, path)
    except OSError as error:
        Path(tmp_name).unlink(missing_ok=True)
        if error.filename is not None or not error.errno:
            raise
        # A full disk or a quota fails the write itself, whose error names no file: name the one being written.
        raise OSError(error.errno, error.strerror, str(path)) from error
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Create or replace ``path`` with ``data``, atomically (see :func:`atomic_write`)."""
    atomic_write(path, lambda handle: handle.write(data))


def write_json(path: Path, document: Any) -> None:
    """Write ``document`` as indented JSON, atomically."""
    payload = (json.dumps(document, indent=2, sort_keys=False) + "\n").encode()
    atomic_write_bytes(path, payload)
