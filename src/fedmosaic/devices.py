"""Where PyTorch computes: the ``train.device`` setting, resolved, and values moved to it.

A run computes on one device, set for its duration by :func:`computing_on`
(as :func:`~fedmosaic.threads.torch_threads` sets its thread count); the
methods move what they compute with to it through :func:`to_device`, and
tensors become arrays on the CPU (:func:`fedmosaic.methods.arrays.to_array`),
so the messages between parties never hold a device. Models are built and
every random draw is made on the CPU, then moved: a model starts from the
same values and a client shuffles its data in the same order on every device.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import TypeVar, cast

import torch

from fedmosaic.device_names import DEVICE_FIELD, check_device_name
from fedmosaic.errors import ConfigError

CUBLAS_WORKSPACE = ":4096:8"
"""cuBLAS's workspace setting that makes its matrix products deterministic (PyTorch's reproducibility notes)."""

T = TypeVar("T", bound=torch.Tensor | torch.nn.Module)

_current = torch.device("cpu")


def parse_device(name: str) -> torch.device:
    """The device ``name`` names, whether or not this machine has it (``"auto"`` as the CPU).

    Raises
    ------
    ConfigError
        For a name of no device (:func:`~fedmosaic.device_names.check_device_name`).

    Examples
    --------
    >>> parse_device("cuda:1")
    device(type='cuda', index=1)
    """
    return torch.device("cpu" if check_device_name(name) == "auto" else name)


def resolve_device(name: str) -> torch.device:
    """The device ``name`` stands for on this machine.

    Parameters
    ----------
    name : {"auto", "cpu", "cuda", "cuda:N", "mps"}
        ``"auto"`` is CUDA's first device when ``torch.cuda.is_available()``,
        else the CPU.

    Raises
    ------
    ConfigError
        On one line naming ``train.device``: a name of no device
        (:func:`parse_device`), or a device this machine does not have.

    Examples
    --------
    >>> resolve_device("cpu")
    device(type='cpu')
    """
    device = parse_device(name)
    if name == "auto" and torch.cuda.is_available():
        return torch.device("cuda")
    if device.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if (device.index or 0) >= count:
            found = f"{count} CUDA device{'s' if count != 1 else ''}" if count else "no CUDA device"
            raise ConfigError(
                DEVICE_FIELD, f"{name!r} is not available: this machine has {found} (use 'cpu' or 'auto')"
            )
    if device.type == "mps" and not torch.backends.mps.is_available():
        raise ConfigError(DEVICE_FIELD, "'mps' is not available: this machine has no Apple GPU (use 'cpu' or 'auto')")
    return device


def compute_device() -> torch.device:
    """The device of the run in progress (the CPU outside :func:`computing_on`)."""
    return _current


def to_device(value: T) -> T:
    """``value`` (a tensor or a module) on the device of the run in progress; itself when already there.

    Examples
    --------
    >>> x = torch.zeros(2)
    >>> to_device(x) is x
    True
    """
    return cast(T, value.to(_current))


def generator_on(device: torch.device, generator: torch.Generator) -> torch.Generator:
    """A generator on ``device`` for draws that must be made there: ``generator`` itself on its own device.

    Elsewhere, a generator on ``device`` seeded from one draw of ``generator``
    (the draws then differ from the CPU's, as a GPU's kernels do).

    Examples
    --------
    >>> g = torch.Generator().manual_seed(0)
    >>> generator_on(torch.device("cpu"), g) is g
    True
    """
    if device.type == generator.device.type:
        return generator
    seed = int(torch.randint(2**62, (), generator=generator))
    return torch.Generator(device=device).manual_seed(seed)


@contextlib.contextmanager
def computing_on(name: str) -> Iterator[torch.device]:
    """Compute on the device ``name`` stands for inside the block (:func:`resolve_device`), then as before.

    On CUDA, PyTorch's deterministic algorithms are switched on for the
    block (warning, not failing, where an operation has none) and cuBLAS's
    deterministic workspace is set unless the environment sets it: the same
    device and the same seed give the same numbers. The CPU is left as it is.

    Examples
    --------
    >>> with computing_on("cpu") as device:
    ...     compute_device() == device
    True
    """
    global _current
    device = resolve_device(name)
    previous = _current
    deterministic = torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()
    if device.type == "cuda":  # only there: the setting's first use costs seconds (imports)
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", CUBLAS_WORKSPACE)
        torch.use_deterministic_algorithms(True, warn_only=True)
    _current = device
    try:
        yield device
    finally:
        _current = previous
        if device.type == "cuda":
            torch.use_deterministic_algorithms(deterministic[0], warn_only=deterministic[1])
