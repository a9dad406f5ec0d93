"""Deep equality of whole objects, for comparing a resumed run's server with an uninterrupted one's.

Two objects are the same when they are of the same type and all they hold is
the same, bit for bit: arrays and tensors (dtype, shape, values, NaN equal to
NaN), modules and optimizers by their ``state_dict``, random generators by
their state, functions by name, any other object attribute by attribute.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from torch import nn


def assert_same(a: Any, b: Any, path: str = "") -> None:
    """Raise AssertionError naming the first place where ``a`` and ``b`` differ."""
    _compare(a, b, path or type(a).__name__, set())


def _compare(a: Any, b: Any, path: str, seen: set[tuple[int, int]]) -> None:
    if a is b:
        return
    if type(a) is not type(b):
        raise AssertionError(f"{path}: {type(a).__name__} != {type(b).__name__}")
    if (id(a), id(b)) in seen:
        return
    seen.add((id(a), id(b)))
    if isinstance(a, np.ndarray):
        _arrays(a, b, path)
    elif isinstance(a, torch.Tensor):
        _arrays(a.detach().cpu().numpy(), b.detach().cpu().numpy(), path)
    elif isinstance(a, (nn.Module, torch.optim.Optimizer)):
        _compare(a.state_dict(), b.state_dict(), f"{path}.state_dict()", seen)
    elif isinstance(a, torch.Generator):
        _arrays(a.get_state().numpy(), b.get_state().numpy(), path)
    elif isinstance(a, np.random.Generator):
        _compare(a.bit_generator.state, b.bit_generator.state, path, seen)
    elif isinstance(a, float):
        if not (a == b or (math.isnan(a) and math.isnan(b))):
            raise AssertionError(f"{path}: {a!r} != {b!r}")
    elif isinstance(a, dict):
        if a.keys() != b.keys():
            raise AssertionError(f"{path}: keys {sorted(map(str, a))} != {sorted(map(str, b))}")
        for key in a:
            _compare(a[key], b[key], f"{path}[{key!r}]", seen)
    elif isinstance(a, (list, tuple)):
        if len(a) != len(b):
            raise AssertionError(f"{path}: length {len(a)} != {len(b)}")
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            _compare(x, y, f"{path}[{i}]", seen)
    elif callable(a) and hasattr(a, "__qualname__"):
        if a.__qualname__ != b.__qualname__:
            raise AssertionError(f"{path}: {a.__qualname__} != {b.__qualname__}")
    elif hasattr(a, "__dict__") or hasattr(type(a), "__slots__"):
        _compare(_attributes(a), _attributes(b), path, seen)
    elif a != b:
        raise AssertionError(f"{path}: {a!r} != {b!r}")


def _attributes(obj: Any) -> dict[str, Any]:
    names = [*getattr(obj, "__dict__", {})]
    names += [s for cls in type(obj).__mro__ for s in getattr(cls, "__slots__", ()) if hasattr(obj, s)]
    return {name: getattr(obj, name) for name in sorted(set(names)) if name != "__weakref__"}


def _arrays(a: np.ndarray, b: np.ndarray, path: str) -> None:
    if a.dtype != b.dtype or a.shape != b.shape:
        raise AssertionError(f"{path}: {a.dtype}{a.shape} != {b.dtype}{b.shape}")
    if not np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"):
        raise AssertionError(f"{path}: values differ")
