"""Horizontal partitioning: which samples each client holds.

Every partitioner returns one sorted int64 array of sample positions per
client; the clients' arrays are disjoint. Index arrays, not data, are returned
so that a client's samples are taken with ``dataset.subset(indices)`` only when
needed.
"""

import math

import numpy as np
import numpy.typing as npt

from fedmosaic.data._choices import unknown_choice
from fedmosaic.errors import ConfigError

SCHEMES: tuple[str, ...] = ("dirichlet", "iid", "pathological")
"""Names accepted by :func:`partition`."""

DEFAULT_MIN_SIZE = 10
MAX_DIRICHLET_DRAWS = 1000
"""How many Dirichlet draws :func:`dirichlet_partition` tries before giving up on ``min_size``."""


def iid_partition(n_samples: int, num_clients: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Deal the samples at random into clients of equal size (within one sample).

    Parameters
    ----------
    n_samples : int
        Number of samples to share out.
    num_clients : int
        Number of clients, from 1 to ``n_samples``.
    rng : np.random.Generator
        Source of randomness.

    Returns
    -------
    list[np.ndarray]
        Sorted sample positions of each client; together they cover every sample.

    Raises
    ------
    ConfigError
        If ``num_clients`` is below 1 or above ``n_samples`` (field ``partition.num_clients``).

    Examples
    --------
    >>> import numpy as np
    >>> [len(part) for part in iid_partition(10, 3, np.random.default_rng(0))]
    [4, 3, 3]
    """
    _check_num_clients(num_clients, n_samples)
    return _sorted_parts(np.array_split(rng.permutation(n_samples), num_clients))


def dirichlet_partition(
    labels: npt.ArrayLike,
    num_clients: int,
    alpha: float,
    rng: np.random.Generator,
    min_size: int = DEFAULT_MIN_SIZE,
) -> list[np.ndarray]:
    """Share each class among the clients in proportions drawn from Dirichlet(``alpha``).

    For every class, client shares are drawn from a symmetric Dirichlet
    distribution; a small ``alpha`` gives each client few dominant classes, a
    large one approaches an IID split. The shares are redrawn until every
    client holds at least ``min_size`` samples, at most
    :data:`MAX_DIRICHLET_DRAWS` times.

    Parameters
    ----------
    labels : array_like of int
        Class label of every sample, shape ``(n,)``.
    num_clients : int
        Number of clients, from 1 to ``n``.
    alpha : float
        Concentration, finite and > 0.
    rng : np.random.Generator
        Source of randomness.
    min_size : int, optional
        Fewest samples a client may hold.

    Returns
    -------
    list[np.ndarray]
        Sorted sample positions of each client; together they cover every sample.

    Raises
    ------
    ConfigError
        If a parameter is out of range, or ``min_size`` is not met after
        :data:`MAX_DIRICHLET_DRAWS` draws (field ``partition.min_size``).

    Examples
    --------
    >>> import numpy as np
    >>> labels = np.repeat(np.arange(4), 25)
    >>> parts = dirichlet_partition(labels, 4, alpha=0.5, rng=np.random.default_rng(0), min_size=5)
    >>> sum(len(part) for part in parts), min(len(part) for part in parts) >= 5
    (100, True)
    """
    labels = _as_labels(labels)
    _check_num_clients(num_clients, len(labels))
    if not 0 < alpha < math.inf:
        raise ConfigError("partition.alpha", f"must be a finite number > 0 (got {alpha})")
    _check_min_size(min_size, num_clients, len(labels))
    members = [np.flatnonzero(labels == label) for label in np.unique(labels)]
    class_sizes = np.array([len(positions) for positions in members])
    for _ in range(MAX_DIRICHLET_DRAWS):
        shares = rng.dirichlet(np.full(num_clients, alpha), size=len(members))
        ends = np.floor(np.cumsum(shares, axis=1) * class_sizes[:, np.newaxis]).astype(np.int64)
        ends[:, -1] = class_sizes
        counts = np.diff(ends, axis=1, prepend=0)
        if counts.sum(axis=0).min() >= min_size:
            return _deal(members, counts, rng)
    raise ConfigError(
        "partition.min_size",
        f"cannot be met: no Dirichlet draw out of {MAX_DIRICHLET_DRAWS} gave each of {num_clients} "
        f"clients {min_size} samples at alpha={alpha}; lower min_size or num_clients, or raise alpha",
    )


def pathological_partition(
    labels: npt.ArrayLike,
    num_clients: int,
    classes_per_client: int,
    rng: np.random.Generator,
    min_size: int = DEFAULT_MIN_SIZE,
) -> list[np.ndarray]:
    """Give each client samples of exactly ``classes_per_client`` classes.

    Clients pick their classes in turn, each taking the classes held by the
    fewest clients so far (ties broken at random), so classes are used evenly
    and all of them are used when ``num_clients * classes_per_client`` is at
    least the number of classes. Each class's samples are then cut into
    equal shards, one for every client holding the class.

    Parameters
    ----------
    labels : array_like of int
        Class label of every sample, shape ``(n,)``.
    num_clients : int
        Number of clients, from 1 to ``n``.
    classes_per_client : int
        Classes per client, from 1 to the number of distinct labels.
    rng : np.random.Generator
        Source of randomness.
    min_size : int, optional
        Fewest samples a client may hold.

    Returns
    -------
    list[np.ndarray]
        Sorted sample positions of each client.

    Raises
    ------
    ConfigError
        If a parameter is out of range, a class has fewer samples than clients
        holding it (field ``partition.classes_per_client``), or a client ends
        up with fewer than ``min_size`` samples (field ``partition.min_size``).

    Examples
    --------
    >>> import numpy as np
    >>> labels = np.repeat(np.arange(4), 25)
    >>> parts = pathological_partition(labels, 4, 2, np.random.default_rng(0))
    >>> [len(np.unique(labels[part])) for part in parts]
    [2, 2, 2, 2]
    """
    labels = _as_labels(labels)
    _check_num_clients(num_clients, len(labels))
    classes = np.unique(labels)
    if not 1 <= classes_per_client <= len(classes):
        raise ConfigError(
            "partition.classes_per_client",
            f"must be >= 1 and <= the number of classes, {len(classes)} (got {classes_per_client})",
        )
    _check_min_size(min_size, num_clients, len(labels))
    holders = np.zeros((len(classes), num_clients), dtype=bool)
    usage = np.zeros(len(classes))
    for client in range(num_clients):
        chosen = np.argsort(usage + rng.random(len(classes)))[:classes_per_client]
        holders[chosen, client] = True
        usage[chosen] += 1
    members = [np.flatnonzero(labels == label) for label in classes]
    counts = np.zeros(holders.shape, dtype=np.int64)
    for row, (label, positions) in enumerate(zip(classes, members, strict=True)):
        clients = np.flatnonzero(holders[row])
        if len(positions) < len(clients):
            raise ConfigError(
                "partition.classes_per_client",
                f"class {label} has {len(positions)} samples, too few for the {len(clients)} clients "
                "that hold it; lower classes_per_client or num_clients",
            )
        shard_ends = np.floor(np.linspace(0, len(positions), len(clients) + 1)).astype(np.int64)
        counts[row, clients] = np.diff(shard_ends)
    smallest = int(counts.sum(axis=0).min())
    if smallest < min_size:
        raise ConfigError(
            "partition.min_size",
            f"cannot be met: the smallest client holds {smallest} samples (min_size {min_size}); "
            "lower min_size or num_clients",
        )
    return _deal(members, counts, rng)


def partition(
    labels: npt.ArrayLike,
    *,
    scheme: str,
    num_clients: int,
    rng: np.random.Generator,
    alpha: float = 0.5,
    classes_per_client: int = 2,
    min_size: int = DEFAULT_MIN_SIZE,
) -> list[np.ndarray]:
    """Partition samples among clients with the named scheme.

    Parameters
    ----------
    labels : array_like of int
        Class label of every sample, shape ``(n,)``.
    scheme : str
        One of :data:`SCHEMES`: ``"iid"`` (:func:`iid_partition`),
        ``"dirichlet"`` (:func:`dirichlet_partition`) or ``"pathological"``
        (:func:`pathological_partition`).
    num_clients : int
        Number of clients.
    rng : np.random.Generator
        Source of randomness.
    alpha : float, optional
        Dirichlet concentration; used by ``"dirichlet"``.
    classes_per_client : int, optional
        Classes per client; used by ``"pathological"``.
    min_size : int, optional
        Fewest samples a client may hold; used by ``"dirichlet"`` and ``"pathological"``.

    Returns
    -------
    list[np.ndarray]
        Sorted sample positions of each client.

    Raises
    ------
    ConfigError
        If ``scheme`` is unknown (field ``partition.scheme``) or a parameter is out of range.

    Examples
    --------
    >>> import numpy as np
    >>> labels = np.arange(20) % 2
    >>> parts = partition(labels, scheme="iid", num_clients=2, rng=np.random.default_rng(0))
    >>> [len(part) for part in parts]
    [10, 10]
    """
    if scheme == "iid":
        return iid_partition(len(_as_labels(labels)), num_clients, rng)
    if scheme == "dirichlet":
        return dirichlet_partition(labels, num_clients, alpha, rng, min_size)
    if scheme == "pathological":
        return pathological_partition(labels, num_clients, classes_per_client, rng, min_size)
    raise unknown_choice("partition.scheme", "scheme", scheme, SCHEMES)


def _as_labels(labels: npt.ArrayLike) -> np.ndarray:
    array = np.asarray(labels)
    if array.ndim != 1 or not np.issubdtype(array.dtype, np.integer):
        raise TypeError(f"labels must be a 1-D integer array (got {array.dtype} of shape {array.shape})")
    return array


def _check_num_clients(num_clients: int, n_samples: int) -> None:
    if num_clients < 1:
        raise ConfigError("partition.num_clients", f"must be >= 1 (got {num_clients})")
    if num_clients > n_samples:
        raise ConfigError(
            "partition.num_clients",
            f"more clients than samples: must be <= {n_samples} (got {num_clients})",
        )


def _check_min_size(min_size: int, num_clients: int, n_samples: int) -> None:
    if min_size < 0:
        raise ConfigError("partition.min_size", f"must be >= 0 (got {min_size})")
    if min_size * num_clients > n_samples:
        raise ConfigError(
            "partition.min_size",
            f"cannot be met: {num_clients} clients x {min_size} samples exceeds the {n_samples} samples; "
            f"must be <= {n_samples // num_clients}",
        )


def _deal(members: list[np.ndarray], counts: np.ndarray, rng: np.random.Generator) -> list[np.ndarray]:
    """Give client ``j`` ``counts[i, j]`` random samples of class ``i``; leftovers go to no one."""
    shards = [
        np.split(rng.permutation(positions), np.cumsum(row))[:-1]
        for positions, row in zip(members, counts, strict=True)
    ]
    return _sorted_parts([np.concatenate(column) for column in zip(*shards, strict=True)])


def _sorted_parts(parts: list[np.ndarray]) -> list[np.ndarray]:
    return [np.sort(part).astype(np.int64, copy=False) for part in parts]
