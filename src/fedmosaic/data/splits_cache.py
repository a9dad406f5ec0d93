"""Sampled concept splits kept on disk, so the runs of a grid point sample and autoencode a network once.

A network's splits depend only on what :func:`~fedmosaic.data.bayesnet.sample_concept_splits`
is given (network, seed, sizes, noise, input construction) and on the code and libraries that
compute them. The cache file's name is a hash of all of that: the arguments, the source of the
modules that sample and autoencode (:data:`SOURCES`), and the versions of fedmosaic, NumPy,
PyTorch, pgmpy and scikit-learn (the splits' linear probe); any change to them is a new file, never a stale hit.

The folder is ``$FEDMOSAIC_SPLITS_CACHE``, else ``$XDG_CACHE_HOME/fedmosaic/splits``
(``~/.cache/fedmosaic/splits`` when ``XDG_CACHE_HOME`` is unset); ``FEDMOSAIC_SPLITS_CACHE=off``
turns the cache off. A file is written to a temporary name and renamed into place, so a reader
sees a whole file or none, and two processes computing the same splits at once both write the
same content. A file that cannot be read is computed again and replaced.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import zipfile
from collections.abc import Callable, Mapping
from importlib import metadata
from pathlib import Path

import numpy as np

from fedmosaic.atomic import atomic_write
from fedmosaic.data.concept_splits import ConceptSplits
from fedmosaic.errors import FedmosaicError
from fedmosaic.version import __version__

CACHE_ENV = "FEDMOSAIC_SPLITS_CACHE"
OFF = "off"
SOURCES = (
    "fedmosaic.data.bayesnet",
    "fedmosaic.data.concept_inputs",
    "fedmosaic.data.concept_splits",
    "fedmosaic.seeding",
)
"""The modules whose code determines the splits."""
LIBRARIES = ("numpy", "torch", "pgmpy", "scikit-learn")


def cache_folder() -> Path | None:
    """The folder of cached splits, or None where ``FEDMOSAIC_SPLITS_CACHE=off``."""
    chosen = os.environ.get(CACHE_ENV, "")
    if chosen == OFF:
        return None
    if chosen:
        return Path(chosen).expanduser()
    cache_home = os.environ.get("XDG_CACHE_HOME", "") or "~/.cache"
    return Path(cache_home).expanduser() / "fedmosaic" / "splits"


def cache_key(arguments: Mapping[str, object]) -> str:
    """A hash of ``arguments`` (JSON values), the code of :data:`SOURCES` and the library versions."""
    digest = hashlib.sha256(json.dumps(dict(arguments), sort_keys=True).encode())
    digest.update(__version__.encode())
    for library in LIBRARIES:
        digest.update(f"{library}={metadata.version(library)}".encode())
    for name in SOURCES:
        source = importlib.import_module(name).__file__
        assert source is not None  # modules of this package are files
        digest.update(Path(source).read_bytes())
    return digest.hexdigest()[:32]


def cached_splits(arguments: Mapping[str, object], compute: Callable[[], ConceptSplits]) -> ConceptSplits:
    """The splits computed from ``arguments``, read from the cache, or computed by ``compute`` and stored.

    Parameters
    ----------
    arguments : mapping of str to JSON values
        Every argument that determines the splits, defaults resolved (the network's name under ``network``).
    compute : callable () -> ConceptSplits
        Samples the splits where the cache holds none.
    """
    folder = cache_folder()
    if folder is None:
        return compute()
    path = folder / f"{arguments['network']}-{cache_key(arguments)}.npz"
    try:
        with np.load(path, allow_pickle=False) as stored:
            return ConceptSplits.from_arrays(stored)
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, FedmosaicError):  # missing or unreadable: computed again
        pass
    splits = compute()
    arrays = splits.to_arrays()
    atomic_write(path, lambda handle: np.savez(handle, allow_pickle=False, **arrays))
    return splits
