"""Derived randomness.

Every random draw in a run comes from a generator seeded by the experiment seed
and a tuple of keys (round, client id, purpose). Results therefore do not
depend on the engine, on the order in which clients run, or on resuming from
a checkpoint.
"""

from __future__ import annotations

import hashlib

import numpy as np

SeedKey = int | str


def derive_seed(seed: int, *keys: SeedKey) -> int:
    """Derive a 63-bit seed from an experiment seed and a tuple of keys.

    Parameters
    ----------
    seed : int
        The experiment seed.
    *keys : int or str
        What the seed is for, e.g. ``(round, client_id, "train")``. The tuple
        is encoded without ambiguity and hashed with BLAKE2b, so the result
        is the same in every process (unlike Python's salted ``hash``).

    Returns
    -------
    int
        A seed in ``[0, 2**63)``.

    Examples
    --------
    >>> derive_seed(0, 1, 2, "train") == derive_seed(0, 1, 2, "train")
    True
    >>> derive_seed(0, 1, 2, "train") == derive_seed(0, 2, 1, "train")
    False
    """
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be >= 0 (an integer), got {seed!r}")
    payload = b"".join(_encode(key) for key in (seed, *keys))
    digest = hashlib.blake2b(payload, digest_size=8, person=b"fedmosaic").digest()
    return int.from_bytes(digest, "little") & ((1 << 63) - 1)


def derive_rng(seed: int, *keys: SeedKey) -> np.random.Generator:
    """A NumPy generator seeded by :func:`derive_seed`.

    Examples
    --------
    >>> float(derive_rng(0, "sample").random()) == float(derive_rng(0, "sample").random())
    True
    """
    return np.random.default_rng(derive_seed(seed, *keys))


def _encode(key: SeedKey) -> bytes:
    """A prefix-free encoding: a type tag, the length, then the value's bytes."""
    if isinstance(key, bool) or not isinstance(key, (int, str)):
        raise TypeError(f"seed keys must be int or str, got {type(key).__name__}")
    if isinstance(key, int):
        if key < 0:
            raise ValueError(f"integer seed keys must be >= 0, got {key}")
        body, tag = str(key).encode(), b"i"
    else:
        body, tag = key.encode(), b"s"
    return tag + len(body).to_bytes(4, "little") + body
