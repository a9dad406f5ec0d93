"""Moving a PyTorch model's tensors to and from named NumPy arrays."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from typing import TypeVar

import numpy as np
import torch
from torch import nn

from fedmosaic.devices import to_device

T = TypeVar("T")


def model_to_arrays(model: nn.Module, *, copy: bool = True) -> dict[str, np.ndarray]:
    """Copy every parameter and buffer of ``model`` into a named array.

    With ``copy=False`` a CPU tensor's array shares its memory, so it follows
    the model's later in-place updates.

    Examples
    --------
    >>> from torch import nn
    >>> sorted(model_to_arrays(nn.Linear(2, 1)))
    ['bias', 'weight']
    """
    return {name: to_array(t).copy() if copy else to_array(t) for name, t in model.state_dict().items()}


def to_array(tensor: torch.Tensor) -> np.ndarray:
    """``tensor``'s values as a NumPy array on the CPU: how a tensor leaves for a message.

    A CPU tensor's array shares its memory (copy it to keep it); a tensor on
    another device is copied to the CPU first.

    Examples
    --------
    >>> to_array(torch.ones(2, requires_grad=True)).tolist()
    [1.0, 1.0]
    """
    return tensor.detach().cpu().numpy()


def to_tensor(array: np.ndarray) -> torch.Tensor:
    """``array`` as a tensor on the run's device (:func:`fedmosaic.devices.to_device`).

    On the CPU the tensor shares the array's memory (``torch.from_numpy``):
    copy a read-only array (one received in a message) first.

    Examples
    --------
    >>> to_tensor(np.zeros(2, np.float32)).dtype
    torch.float32
    """
    return to_device(torch.from_numpy(array))


def load_arrays(model: nn.Module, arrays: Mapping[str, np.ndarray], *, strict: bool = True) -> None:
    """Copy named arrays into the matching parameters and buffers of ``model``.

    Parameters
    ----------
    model : torch.nn.Module
        Receives the values in place; tensors keep their identity.
    arrays : mapping of str to numpy.ndarray
        Values by name; they are read, never modified.
    strict : bool, default True
        Require ``arrays`` to name every tensor of the model and nothing else.
        With ``strict=False`` only the named tensors are set.

    Raises
    ------
    KeyError
        On missing or unexpected names when ``strict``.
    ValueError
        On a shape mismatch.
    """
    tensors = model.state_dict(keep_vars=True)
    if strict and set(arrays) != set(tensors):
        missing = sorted(set(tensors) - set(arrays))
        unexpected = sorted(set(arrays) - set(tensors))
        raise KeyError(f"arrays do not match the model: missing {missing}, unexpected {unexpected}")
    with torch.no_grad():
        for name, array in arrays.items():
            if name not in tensors:
                raise KeyError(f"model has no tensor {name!r}")
            target = tensors[name].detach()
            if tuple(target.shape) != tuple(array.shape):
                raise ValueError(f"{name}: shape {tuple(array.shape)} != model's {tuple(target.shape)}")
            if target.device.type == "cpu":
                np.copyto(target.numpy(), array, casting="same_kind")
            else:
                target.copy_(torch.from_numpy(np.array(array)))


def seeded(seed: int, build: Callable[[], T]) -> T:
    """Call ``build`` with PyTorch's global generator seeded, then restore it.

    Used where PyTorch draws from its global generator (parameter
    initialisation), so that the draw is derived yet leaves no trace.

    Examples
    --------
    >>> from torch import nn
    >>> a = seeded(3, lambda: nn.Linear(2, 2)).weight
    >>> b = seeded(3, lambda: nn.Linear(2, 2)).weight
    >>> bool((a == b).all())
    True
    """
    with _forked_rng():
        torch.manual_seed(seed)
        return build()


@contextlib.contextmanager
def _forked_rng() -> Iterator[None]:
    with torch.random.fork_rng(devices=[]):
        yield


def prefixed(prefix: str, arrays: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``arrays`` with every name prefixed by ``prefix``: extra named arrays beside a model's in one message or state.

    Examples
    --------
    >>> prefixed("control/", {"fc.weight": np.zeros(1)})
    {'control/fc.weight': array([0.])}
    """
    return {prefix + name: array for name, array in arrays.items()}


def unprefixed(prefix: str, arrays: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The arrays whose name starts with ``prefix``, under their name without it (what :func:`prefixed` wrote).

    Examples
    --------
    >>> unprefixed("control/", {"control/fc.weight": np.zeros(1), "fc.weight": np.ones(1)})
    {'fc.weight': array([0.])}
    """
    return {name[len(prefix) :]: array for name, array in arrays.items() if name.startswith(prefix)}
