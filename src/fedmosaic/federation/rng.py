"""The states of the process-wide random generators, for checkpoints.

fedmosaic draws every random number from generators derived from (seed,
round, client, purpose), so no result depends on a process-wide generator.
A library or a model layer may still draw from one (Python's ``random``,
NumPy's legacy global generator, PyTorch's default generator, e.g. dropout);
checkpoints therefore carry their states too, and a resumed run restores
them, so that a killed and resumed run draws exactly what an uninterrupted
one would. PyTorch's state is captured only when PyTorch is loaded.
"""

from __future__ import annotations

import random
import sys

import numpy as np

PYTHON, NUMPY, TORCH = "python", "numpy", "torch"


def capture_rng_states() -> dict[str, np.ndarray]:
    """The state of each process-wide generator as a plain array.

    Examples
    --------
    >>> import random
    >>> states = capture_rng_states()
    >>> first = random.random()
    >>> restore_rng_states(states)
    >>> random.random() == first
    True
    """
    version, internal, gauss = random.getstate()
    python = np.array([version, *internal, -1 if gauss is None else 0], dtype=np.int64)
    # The legacy global generator is saved and restored because third-party code may draw from it.
    _, keys, pos, has_gauss, cached = np.random.get_state()  # noqa: NPY002
    states = {
        PYTHON: python,
        NUMPY: np.array([*np.asarray(keys, np.int64), pos, has_gauss], dtype=np.int64),
        f"{NUMPY}_gauss": np.array([cached], dtype=np.float64),
    }
    if gauss is not None:
        states[f"{PYTHON}_gauss"] = np.array([gauss])
    torch = sys.modules.get("torch")
    if torch is not None:
        states[TORCH] = torch.get_rng_state().numpy().copy()
    return states


def restore_rng_states(states: dict[str, np.ndarray]) -> None:
    """Set the process-wide generators to states returned by :func:`capture_rng_states`."""
    if PYTHON in states:
        python = [int(v) for v in states[PYTHON]]
        gauss = float(states[f"{PYTHON}_gauss"][0]) if f"{PYTHON}_gauss" in states else None
        random.setstate((python[0], tuple(python[1:-1]), gauss))
    if NUMPY in states:
        values = states[NUMPY]
        keys = values[:624].astype(np.uint32)
        cached = float(states[f"{NUMPY}_gauss"][0])
        np.random.set_state(("MT19937", keys, int(values[624]), int(values[625]), cached))  # noqa: NPY002
    torch = sys.modules.get("torch")
    if TORCH in states and torch is not None:
        torch.set_rng_state(torch.from_numpy(np.asarray(states[TORCH], np.uint8).copy()))
