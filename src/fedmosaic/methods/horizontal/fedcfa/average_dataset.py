"""The global average dataset: chunk means uploaded by clients, pooled by the server.

By the central limit theorem the mean of a chunk of samples is close to the
population mean and reveals little about any one sample; FedCFA shares such
means instead of data. A client shuffles its data, cuts it into chunks and
uploads each chunk's mean input (array ``chunk_x``, shape
``(m, *input_shape)``) and mean one-hot label (``chunk_y``, ``(m, C)``). The
server keeps every client's latest means, turns them into the global average
dataset and broadcasts it with the next round's model as ``avg_x`` and
``avg_y``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

CHUNK_X = "chunk_x"
CHUNK_Y = "chunk_y"
AVERAGE_X = "avg_x"
AVERAGE_Y = "avg_y"
#: Array names reserved for the means in messages and in the server state.
MEAN_NAMES = frozenset({CHUNK_X, CHUNK_Y, AVERAGE_X, AVERAGE_Y})
#: Prefix of the server's cache of each client's latest chunk means in its state.
CACHE_PREFIX = "cache/"


def chunk_indices(
    n: int,
    rng: np.random.Generator,
    *,
    chunk_size: int,
    num_chunks: int | None = None,
    keep_remainder: bool = False,
) -> list[np.ndarray]:
    """Shuffle ``range(n)`` and cut it into chunks.

    Parameters
    ----------
    n : int
        Number of samples.
    rng : numpy.random.Generator
        Source of the shuffle.
    chunk_size : int
        Samples per chunk: ``n // chunk_size`` full chunks, the rest dropped,
        except that fewer than ``chunk_size`` samples make one chunk.
    num_chunks : int or None, default None
        Cut into ``min(num_chunks, n)`` chunks of nearly equal size instead
        (nothing dropped).
    keep_remainder : bool, default False
        With ``chunk_size``: the samples left after the full chunks make one
        more, smaller chunk, as the reference's ``torch.split`` does.

    Returns
    -------
    list of numpy.ndarray
        Sample positions of each chunk; empty when ``n == 0``.

    Examples
    --------
    >>> import numpy as np
    >>> [len(c) for c in chunk_indices(10, np.random.default_rng(0), chunk_size=4)]
    [4, 4]
    >>> [len(c) for c in chunk_indices(3, np.random.default_rng(0), chunk_size=4)]
    [3]
    >>> [len(c) for c in chunk_indices(10, np.random.default_rng(0), chunk_size=4, num_chunks=3)]
    [4, 3, 3]
    >>> [len(c) for c in chunk_indices(10, np.random.default_rng(0), chunk_size=4, keep_remainder=True)]
    [4, 4, 2]
    """
    order = rng.permutation(n)
    if n == 0:
        return []
    if num_chunks is not None:
        return list(np.array_split(order, min(num_chunks, n)))
    if keep_remainder:
        return [order[start : start + chunk_size] for start in range(0, n, chunk_size)]
    full = n // chunk_size
    if full == 0:
        return [order]
    return list(order[: full * chunk_size].reshape(full, chunk_size))


def chunk_means(
    x: np.ndarray,
    y: np.ndarray,
    num_classes: int,
    rng: np.random.Generator,
    *,
    chunk_size: int,
    num_chunks: int | None = None,
    keep_remainder: bool = False,
) -> dict[str, np.ndarray]:
    """What a client uploads: the mean input and mean one-hot label of each chunk.

    Parameters
    ----------
    x : numpy.ndarray
        Inputs, shape ``(n, *input_shape)``.
    y : numpy.ndarray
        Integer labels, shape ``(n,)``.
    num_classes : int
        Length ``C`` of the one-hot labels.
    rng : numpy.random.Generator
        Source of the shuffle (derive it from the client context).
    chunk_size, num_chunks, keep_remainder
        How the data are cut, see :func:`chunk_indices`.

    Returns
    -------
    dict of str to numpy.ndarray
        ``chunk_x`` of shape ``(m, *input_shape)`` and ``chunk_y`` of shape
        ``(m, C)``, float32, one row per chunk.

    Examples
    --------
    >>> import numpy as np
    >>> x, y = np.arange(4, dtype=np.float32)[:, None], np.array([0, 0, 1, 1])
    >>> means = chunk_means(x, y, 2, np.random.default_rng(0), chunk_size=4)
    >>> means["chunk_x"].tolist(), means["chunk_y"].tolist()
    ([[1.5]], [[0.5, 0.5]])
    """
    chunks = chunk_indices(len(x), rng, chunk_size=chunk_size, num_chunks=num_chunks, keep_remainder=keep_remainder)
    one_hot = np.eye(num_classes, dtype=np.float64)[y]
    return {
        CHUNK_X: _stacked_means(x, chunks, x.shape[1:]),
        CHUNK_Y: _stacked_means(one_hot, chunks, (num_classes,)),
    }


def _stacked_means(values: np.ndarray, chunks: Sequence[np.ndarray], shape: tuple[int, ...]) -> np.ndarray:
    if not chunks:
        return np.zeros((0, *shape), dtype=np.float32)
    return np.stack([values[c].mean(axis=0, dtype=np.float64) for c in chunks]).astype(np.float32)


def global_average_dataset(
    uploads: Sequence[Mapping[str, np.ndarray]],
    rng: np.random.Generator,
    *,
    size: int | None = None,
) -> dict[str, np.ndarray]:
    """The server's global average dataset from clients' chunk means.

    Parameters
    ----------
    uploads : sequence of mapping of str to numpy.ndarray
        Chunk means (``chunk_x`` and ``chunk_y``), one mapping per client,
        in client order.
    rng : numpy.random.Generator
        Source of the shuffle (unused when ``size`` is None).
    size : int or None, default None
        None: every chunk mean, concatenated in client order. Otherwise the
        pooled chunk means are shuffled with ``rng`` and cut into
        ``min(size, m)`` consecutive groups of nearly equal size; each global
        mean is the unweighted mean of its group's chunk means (inputs and
        labels alike, so labels stay probability vectors).

    Returns
    -------
    dict of str to numpy.ndarray
        ``avg_x`` and ``avg_y``, float32; empty when no chunk mean arrived
        (the next round then trains plainly).

    Examples
    --------
    >>> import numpy as np
    >>> up = {"chunk_x": np.ones((3, 2), np.float32), "chunk_y": np.eye(3, dtype=np.float32)}
    >>> out = global_average_dataset([up, up], np.random.default_rng(0), size=2)
    >>> out["avg_x"].shape, out["avg_y"].sum(axis=1).tolist()
    ((2, 2), [1.0, 1.0])
    """
    if not uploads:
        return {}
    means_x = np.concatenate([u[CHUNK_X] for u in uploads])
    means_y = np.concatenate([u[CHUNK_Y] for u in uploads])
    if len(means_x) == 0:
        return {}
    if size is not None:
        groups = np.array_split(rng.permutation(len(means_x)), min(size, len(means_x)))
        means_x = _stacked_means(means_x, groups, means_x.shape[1:])
        means_y = _stacked_means(means_y, groups, means_y.shape[1:])
    return {AVERAGE_X: means_x.astype(np.float32), AVERAGE_Y: means_y.astype(np.float32)}


def without_means(arrays: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``arrays`` less the reserved mean arrays and the cached means: the model's tensors."""
    return {name: a for name, a in arrays.items() if name not in MEAN_NAMES and not name.startswith(CACHE_PREFIX)}


def cache_to_arrays(cache: Mapping[int, Mapping[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """The cache of chunk means as named arrays, ``cache/<client>/chunk_x`` and ``.../chunk_y``.

    Examples
    --------
    >>> import numpy as np
    >>> cache = {3: {"chunk_x": np.zeros((1, 2)), "chunk_y": np.ones((1, 2))}}
    >>> sorted(cache_to_arrays(cache)), sorted(cache_from_arrays(cache_to_arrays(cache)))
    (['cache/3/chunk_x', 'cache/3/chunk_y'], [3])
    """
    return {
        f"{CACHE_PREFIX}{client}/{name}": means[name] for client, means in cache.items() for name in (CHUNK_X, CHUNK_Y)
    }


def cache_from_arrays(arrays: Mapping[str, np.ndarray]) -> dict[int, dict[str, np.ndarray]]:
    """The cache :func:`cache_to_arrays` wrote, by client id."""
    cache: dict[int, dict[str, np.ndarray]] = {}
    for key, array in arrays.items():
        if key.startswith(CACHE_PREFIX):
            client, name = key[len(CACHE_PREFIX) :].split("/")
            cache.setdefault(int(client), {})[name] = array
    return cache
