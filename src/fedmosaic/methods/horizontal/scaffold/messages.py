"""The names under which SCAFFOLD's messages and states carry control variates."""

from __future__ import annotations

import numpy as np

CONTROL = "control/"
"""Prefix of the server control variate ``c`` in messages and in the server state."""
CONTROL_DELTA = "control_delta/"
"""Prefix of a client's change of its control variate ``c_i+ - c_i`` in replies."""
LOCAL_CONTROL = "local_control/"
"""Prefix of the client control variate ``c_i`` in the client state."""


def prefixed(prefix: str, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``arrays`` with every name prefixed by ``prefix``."""
    return {prefix + name: array for name, array in arrays.items()}


def unprefixed(prefix: str, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The arrays whose name starts with ``prefix``, under their name without it."""
    return {name[len(prefix) :]: array for name, array in arrays.items() if name.startswith(prefix)}
