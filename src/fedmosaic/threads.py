"""How many threads PyTorch uses."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import torch


@contextlib.contextmanager
def torch_threads(count: int) -> Iterator[None]:
    """Use ``count`` PyTorch threads inside the block, then restore the previous number.

    Small models gain nothing from more threads, and where cores are shared
    one thread is many times faster (measured: asia's autoencoder 0.2-2 s on
    one thread against 40-50 s on two busy cores).

    Examples
    --------
    >>> import torch
    >>> before = torch.get_num_threads()
    >>> with torch_threads(1):
    ...     torch.get_num_threads()
    1
    >>> torch.get_num_threads() == before
    True
    """
    previous = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def set_torch_threads(count: int) -> None:
    """Use ``count`` PyTorch threads in this process from now on (e.g. in a worker process)."""
    torch.set_num_threads(count)


def usable_cores() -> int:
    """CPU cores this process may run on.

    Examples
    --------
    >>> usable_cores() >= 1
    True
    """
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)
