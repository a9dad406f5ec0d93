"""Named arrays handed between processes through shared memory, without pickling their data.

A sender writes the arrays of several messages into one file of a memory
file system (``/dev/shm`` where there is one) and sends only a small
:class:`SharedArrays` handle through the pipe. Each receiver maps the file
read-only, so every receiving process sees the same pages: an array sent to
many clients (a broadcast global model) is written once per exchange, never
copied per client or per process.
"""

from __future__ import annotations

import mmap
import os
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

_ALIGN = 64


def shared_folder() -> Path:
    """Where shared files go: ``/dev/shm`` when it is a writable folder, else the temporary folder."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        return shm
    return Path(tempfile.gettempdir())


@dataclass(frozen=True)
class SharedArrays:
    """A picklable handle to arrays written into one shared file.

    Parameters
    ----------
    path : str
        The file holding the arrays.
    layout : tuple of (dtype str, shape, offset)
        Where each array lies, in the order they were written.
    """

    path: str
    layout: tuple[tuple[str, tuple[int, ...], int], ...]

    def attach(self) -> list[np.ndarray]:
        """Read-only views of the arrays, mapped from the file (no copy).

        The mapping outlives the file: the sender may delete it as soon as
        every receiver has attached.
        """
        if not self.layout:
            return []
        with open(self.path, "rb") as handle:
            mapped = mmap.mmap(handle.fileno(), 0, prot=mmap.PROT_READ)
        return [
            np.frombuffer(
                mapped, dtype=np.dtype(dtype), count=int(np.prod(shape, dtype=np.int64)), offset=offset
            ).reshape(shape)
            for dtype, shape, offset in self.layout
        ]

    def unlink(self) -> None:
        """Delete the file (mappings already made stay valid)."""
        Path(self.path).unlink(missing_ok=True)


def write_shared(arrays: Iterable[np.ndarray], prefix: str) -> SharedArrays:
    """Write ``arrays`` one after another into a new shared file.

    Parameters
    ----------
    arrays : iterable of numpy.ndarray
        The arrays, in the order :meth:`SharedArrays.attach` returns them.
    prefix : str
        File name prefix (lets the owner find and remove its files).

    Examples
    --------
    >>> import numpy as np
    >>> handle = write_shared([np.arange(3.0), np.ones((2, 2), np.float32)], "fedmosaic-doc-")
    >>> [a.tolist() for a in handle.attach()]
    [[0.0, 1.0, 2.0], [[1.0, 1.0], [1.0, 1.0]]]
    >>> handle.unlink()
    """
    arrays = [np.ascontiguousarray(a) for a in arrays]
    layout, size = [], 0
    for array in arrays:
        layout.append((array.dtype.str, tuple(int(n) for n in array.shape), size))
        size += -(-array.nbytes // _ALIGN) * _ALIGN
    descriptor, path = tempfile.mkstemp(prefix=prefix, dir=shared_folder())
    try:
        if size:
            os.ftruncate(descriptor, size)
            with mmap.mmap(descriptor, size) as mapped:
                for array, (_, _, offset) in zip(arrays, layout, strict=True):
                    mapped[offset : offset + array.nbytes] = array.reshape(-1).view(np.uint8).data
    except BaseException:
        os.close(descriptor)
        Path(path).unlink(missing_ok=True)
        raise
    os.close(descriptor)
    return SharedArrays(path, tuple(layout))


def remove_shared(prefix: str) -> None:
    """Delete every shared file whose name starts with ``prefix`` (left by a stopped process)."""
    for path in shared_folder().glob(f"{prefix}*"):
        path.unlink(missing_ok=True)


def pack_arrays(
    messages: Mapping[int, Mapping[str, np.ndarray]], prefix: str, *, min_bytes: int = 64 * 1024
) -> tuple[SharedArrays | None, dict[int, dict[str, np.ndarray | int]]]:
    """Move the large arrays of several messages into one shared file, each distinct array once.

    Parameters
    ----------
    messages : mapping of int to (mapping of str to ndarray)
        The named arrays of each message, by client id.
    prefix : str
        File name prefix.
    min_bytes : int, default 64 KiB
        Arrays smaller than this stay in the message (pickled with it).

    Returns
    -------
    (SharedArrays or None, dict)
        The handle (``None`` when nothing was large) and, per message, each
        name mapped to either the array itself or its index in the handle.
        The same array object sent to several clients is stored once.
    """
    index_of: dict[int, int] = {}
    stored: list[np.ndarray] = []
    packed: dict[int, dict[str, np.ndarray | int]] = {}
    for client, arrays in messages.items():
        entry: dict[str, np.ndarray | int] = {}
        for name, array in arrays.items():
            if array.nbytes < min_bytes:
                entry[name] = array
                continue
            if id(array) not in index_of:
                index_of[id(array)] = len(stored)
                stored.append(array)
            entry[name] = index_of[id(array)]
        packed[client] = entry
    return (write_shared(stored, prefix) if stored else None), packed


def unpack_arrays(packed: Mapping[str, np.ndarray | int], attached: list[np.ndarray]) -> dict[str, np.ndarray]:
    """The named arrays of one message packed by :func:`pack_arrays` (``attached``: the handle's arrays)."""
    return {name: attached[value] if isinstance(value, int) else value for name, value in packed.items()}
