"""A function named by ``"module:attribute"``, imported when it is first called.

Registries list their components (a method's name, summary and parameters;
a dataset's tasks) without importing what builds or prepares them: a
component names its runtime function as a :class:`Deferred`, so listing the
components or validating a configuration leaves PyTorch, Flower and pandas
unimported until a run reaches them.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Deferred:
    """A function imported from ``target`` when first called; calls pass through to it.

    Parameters
    ----------
    target : str
        ``"package.module:function"``.

    Examples
    --------
    >>> dumps = Deferred("json:dumps")
    >>> dumps([1, 2])
    '[1, 2]'
    >>> dumps.module, str(inspect.signature(Deferred("textwrap:shorten")))
    ('json', '(text, width, **kwargs)')
    """

    target: str

    @property
    def module(self) -> str:
        """The module that defines the function."""
        return self.target.partition(":")[0]

    def resolve(self) -> Callable[..., Any]:
        """The function itself (its module imported, once per process by Python's import system)."""
        module, _, name = self.target.partition(":")
        function: Callable[..., Any] = getattr(importlib.import_module(module), name)
        return function

    @property
    def __signature__(self) -> inspect.Signature:
        """The function's signature, so that :func:`inspect.signature` checks a call against it."""
        return inspect.signature(self.resolve())

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the function."""
        return self.resolve()(*args, **kwargs)
