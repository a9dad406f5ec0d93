"""A part's weights loaded into the network its card describes, once both are known to agree.

The network is first built on PyTorch's ``meta`` device, which allocates
nothing: a card whose architecture asks for a billion units, or that names
tensors the weights lack (or lacks tensors they hold), or gives them other
shapes, is refused on one line before any memory is spent on it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypeVar

import numpy as np
import torch
from torch import nn

from fedmosaic.methods.arrays import load_arrays
from fedmosaic.models.card import ModelFileError

N = TypeVar("N", bound=nn.Module)


def loaded_network(build: Callable[[], N], arrays: Mapping[str, np.ndarray], where: Path) -> N:
    """Build the network ``build`` describes and copy ``arrays`` into it, checked first.

    Parameters
    ----------
    build : callable () -> torch.nn.Module
        Builds the network of the card's architecture.
    arrays : mapping of str to numpy.ndarray
        The part's weights by tensor name.
    where : Path
        The weights file (for messages).

    Raises
    ------
    ModelFileError
        If the weights hold a tensor the architecture does not name, lack one
        it names, or give one another shape.

    Examples
    --------
    >>> import tempfile
    >>> weights = {"weight": np.zeros((2, 3), np.float32), "bias": np.zeros(2, np.float32)}
    >>> where = Path(tempfile.mkdtemp()) / "model.safetensors"
    >>> loaded_network(lambda: nn.Linear(3, 2), weights, where).weight.shape
    torch.Size([2, 3])
    >>> try:
    ...     loaded_network(lambda: nn.Linear(10**6, 10**6), weights, where)
    ... except ModelFileError as error:
    ...     print(str(error).split(": ", 1)[1])
    tensor 'weight' is (2, 3) in the weights, (1000000, 1000000) by the card's architecture
    """
    with torch.device("meta"):
        skeleton = build()
    expected = {name: tuple(tensor.shape) for name, tensor in skeleton.state_dict().items()}
    unnamed = sorted(set(arrays) - set(expected))
    if unnamed:
        raise ModelFileError(f"{where}: the weights hold tensors the card's architecture does not name: {unnamed[:5]}")
    lacking = sorted(set(expected) - set(arrays))
    if lacking:
        raise ModelFileError(f"{where}: the card's architecture names tensors the weights lack: {lacking[:5]}")
    for name, shape in expected.items():
        if tuple(arrays[name].shape) != shape:
            raise ModelFileError(
                f"{where}: tensor {name!r} is {tuple(arrays[name].shape)} in the weights, {shape} by the card's architecture"
            )
    network = build()
    load_arrays(network, arrays)
    return network
