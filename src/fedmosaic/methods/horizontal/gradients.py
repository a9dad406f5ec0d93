"""Gradient hooks installed for one round of local training, then removed."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

from torch import Tensor

GradientMap = Callable[[Tensor], Tensor]
"""Turns a parameter's gradient into the one the optimizer sees."""


@contextmanager
def gradient_hooks(hooks: Iterable[tuple[Tensor, GradientMap]]) -> Iterator[None]:
    """Apply each map to its parameter's gradient inside the block.

    The maps act on the gradient of every backward pass, before the
    optimizer's step (so momentum and weight decay see the mapped gradient),
    and are removed on leaving the block, even on error.

    Examples
    --------
    >>> import torch
    >>> w = torch.ones(2, requires_grad=True)
    >>> with gradient_hooks([(w, lambda g: 3 * g)]):
    ...     w.sum().backward()
    >>> w.grad.tolist()
    [3.0, 3.0]
    >>> w.grad = None; w.sum().backward(); w.grad.tolist()
    [1.0, 1.0]
    """
    handles = [tensor.register_hook(fn) for tensor, fn in hooks]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()
