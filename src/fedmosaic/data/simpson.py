"""Simpson-MNIST: coloured digits 1 and 7 whose colour rule differs by client and reverses when pooled.

The binary task of FedCFA (Alleviating Simpson's Paradox in Model Aggregation
with Counterfactual Federated Learning, AAAI 2025): label 0 is digit 1,
label 1 is digit 7. Each image is tinted with a *shade* ``s`` in ``[0, 1)``,
dark (0) to light (1). In every client the 1s are darker than the 7s, while
in the pooled data the 1s are the lighter digits.

Two designs, for ``K = num_clients`` clients; in both the share of 1s in
client ``k`` (``k = 0 .. K-1``) is ``p_k = 0.1 + 0.8 k / (K-1)`` (0.1, 0.3,
0.5, 0.7, 0.9 for ``K = 5``), so the lighter clients hold mostly 1s, and a
client of ``n`` samples holds ``round(p_k n)`` 1s and the rest 7s.

* ``design="conflicting"`` (the default, ``K >= 3``): with ``d = 1/(K+1)``,
  client ``k``'s 1s take shades in ``[k d, (k+1) d)`` and its 7s in
  ``[(k+1) d, (k+2) d)``: ``s = (k + y + u) d`` with ``y`` the label and
  ``u ~ U[0, 1)``. Within every client colour separates the digits perfectly
  ("darker is 1", the threshold ``(k+1) d``); neighbouring clients disagree
  about the same shade (``[(k+1) d, (k+2) d)`` holds client ``k``'s 7s and
  client ``k+1``'s 1s); pooled, the class mix dominates and the trend is
  reversed ("lighter is 1"): for ``K = 5`` equal clients the pooled Pearson
  correlation between shade and label is about -0.24 (at ``K = 2`` it would
  be positive, so fewer than 3 clients are refused). No colour rule is right
  everywhere: only the digit's shape is.
* ``design="bands"`` (the first design, kept so its results stay
  reproducible, ``K >= 2``): client ``k`` holds the band ``[k/K, (k+1)/K)``,
  1s in its darker half and 7s in its lighter half, ``s = (k + y/2 + u/2) / K``.
  The bands do not overlap, so one colour rule (``y = floor(2 K s) mod 2``)
  is right in every client and in the pooled data.

Common to both:

* **Colour.** ``colour(s) = DARK + s (LIGHT - DARK)`` with ``DARK = (0.35, 0.10,
  0.05)`` (dark red) and ``LIGHT = (1.00, 0.90, 0.60)`` (light yellow), every
  channel rising with ``s``; an MNIST pixel of intensity ``v`` in ``[0, 1]``
  becomes ``rgb = v * colour(s)``, so the background stays black.
* **Shape detail** (``resolution``): each digit may be averaged down to
  ``resolution x resolution`` pixels and scaled back up by repetition
  (nearest neighbour) before it is tinted. Coarser digits make the shape
  less informative and the colour shortcut more tempting.
* **Rows.** Client and pretraining digits are drawn without replacement from
  MNIST's training split: clients first, then the pretraining sample, so the
  two never share a row.
* **Pretraining sample** (``pretrain_samples``): stratified as the pooled
  data (``K`` near-equal groups, group ``k`` mixed as client ``k``). Its
  shades are independent of the label (uniform on ``[0, 1)``) in the
  ``conflicting`` design, so the initial model learns the digits, not a
  colour rule; in the ``bands`` design group ``k`` is shaded as client ``k``.
* **Validation set** (``validation_samples``): half 1s, half 7s, from
  MNIST's training rows that neither the clients nor the pretraining sample
  hold, shaded and colour-swapped as the test set; hyper-parameters are
  chosen on it, never on the test set.
* **Test set**: every 1 and 7 of MNIST's test split. ``test_colours``:
  ``"independent"`` (the default of the ``conflicting`` design) draws each
  shade uniformly on ``[0, 1)`` whatever the label; ``"pooled"`` (the default
  of ``bands``) gives a digit of label ``y`` client ``k``'s rule with
  probability proportional to the share of label ``y`` in client ``k`` (the
  pooled law), then a shade by that rule.
* **Colour-swap test** (:class:`ColourSwap`): each test digit is shown twice,
  at a shade of its own class and at one of the other class under the rule
  of one client drawn uniformly (same client, same ``u``). The digits are the
  same; only the shades differ. A model that reads the digit scores the same
  on both; the *colour reliance* ``accuracy(own) - accuracy(swapped)``
  measures how much it reads the local colour rule instead.

Every draw comes from ``derive_rng(seed, "simpson", ...)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fedmosaic.data._choices import unknown_choice
from fedmosaic.data.arrays import ArrayDataset, DatasetSplits
from fedmosaic.data.simpson_colours import (
    DARK,
    LIGHT,
    ONE_SHARE_RANGE,
    coarsened,
    one_shares,
    rule_shades,
    shade_colour,
    shade_label_correlation,
)
from fedmosaic.errors import ConfigError, FedmosaicError
from fedmosaic.seeding import derive_rng

__all__ = [
    "DARK",
    "DEFAULT_TEST_COLOURS",
    "DESIGNS",
    "DIGITS",
    "LIGHT",
    "MIN_CLIENTS",
    "MIN_SAMPLES_PER_CLIENT",
    "ONE_SHARE_RANGE",
    "TEST_COLOURS",
    "ColourSwap",
    "SimpsonSplits",
    "coarsened",
    "one_shares",
    "rule_shades",
    "shade_colour",
    "shade_label_correlation",
    "simpson_mnist",
]

DIGITS: tuple[int, int] = (1, 7)
"""The MNIST digits of labels 0 and 1."""
DESIGNS: tuple[str, ...] = ("conflicting", "bands")
"""Values accepted by ``simpson_mnist(design=...)``; the first is the default."""
MIN_CLIENTS = {"conflicting": 3, "bands": 2}
"""Fewest clients of each design whose pooled trend is reversed."""
TEST_COLOURS: tuple[str, ...] = ("independent", "pooled")
"""Values accepted by ``simpson_mnist(test_colours=...)``."""
DEFAULT_TEST_COLOURS = {"conflicting": "independent", "bands": "pooled"}
"""The test colours of each design when none are asked for."""
MIN_SAMPLES_PER_CLIENT = 10
"""Smallest client that still holds both digits at the extreme shares 0.1 and 0.9."""


@dataclass(frozen=True, eq=False)
class SimpsonSplits:
    """The clients, test set and pretraining sample of Simpson-MNIST.

    Every dataset holds RGB images, float32 ``(n, 3, H, W)`` in ``[0, 1]``,
    with labels 0 (digit 1) and 1 (digit 7) and ``num_classes=2``.

    Parameters
    ----------
    clients : list[ArrayDataset]
        One dataset per client, darkest band first.
    test : ArrayDataset
        Digits 1 and 7 of MNIST's test split.
    pretrain : ArrayDataset
        A pooled sample of training digits that no client holds.
    shades : list[np.ndarray]
        Per client, the shade of each sample, in ``[0, 1)``.
    test_shades : np.ndarray
        The shade of each test sample.
    pretrain_shades : np.ndarray
        The shade of each pretraining sample.
    sources : list[np.ndarray]
        Per client, the row of MNIST's training split each sample comes from.
    pretrain_sources : np.ndarray
        The training row of each pretraining sample.
    test_sources : np.ndarray
        The test-split row of each test sample.
    colour_swap : ColourSwap
        The test digits at a shade of their own class and of the other class.
    validation : ArrayDataset
        Training digits no client holds, shaded as the test set.
    validation_swap : ColourSwap
        The validation digits at a shade of their own class and of the other class.
    validation_sources : np.ndarray
        The training row of each validation sample.

    Examples
    --------
    >>> import numpy as np
    >>> images = np.random.default_rng(0).random((120, 1, 4, 4), dtype=np.float32)
    >>> digits = ArrayDataset(images, np.tile([1, 7, 0], 40), num_classes=10)
    >>> splits = simpson_mnist(DatasetSplits(digits, digits, "toy"), seed=0, num_clients=3,
    ...                        samples_per_client=10, pretrain_samples=4, validation_samples=0)
    >>> [len(client) for client in splits.clients], splits.test.x.shape
    ([10, 10, 10], (80, 3, 4, 4))
    """

    clients: list[ArrayDataset]
    test: ArrayDataset
    pretrain: ArrayDataset
    shades: list[np.ndarray]
    test_shades: np.ndarray
    pretrain_shades: np.ndarray
    sources: list[np.ndarray]
    pretrain_sources: np.ndarray
    test_sources: np.ndarray
    colour_swap: ColourSwap
    validation: ArrayDataset
    validation_swap: ColourSwap
    validation_sources: np.ndarray


@dataclass(frozen=True, eq=False)
class ColourSwap:
    """Every test digit at a shade of its own class and at one of the other class.

    Row ``i`` of ``own`` and of ``swapped`` is the same digit with the same
    label, tinted under the same client's rule with the same uniform draw,
    once at its own class's shade and once at the other class's.

    Parameters
    ----------
    own : ArrayDataset
        The digits at a shade of their own class.
    swapped : ArrayDataset
        The same digits at a shade of the other class.
    own_shades : np.ndarray
        Shade of each row of ``own``.
    swapped_shades : np.ndarray
        Shade of each row of ``swapped``.
    """

    own: ArrayDataset
    swapped: ArrayDataset
    own_shades: np.ndarray
    swapped_shades: np.ndarray


@dataclass(frozen=True)
class _Part:
    """Training rows, labels and shade bands of one client or of the pretraining sample."""

    rows: np.ndarray
    labels: np.ndarray
    bands: np.ndarray


def simpson_mnist(
    mnist: DatasetSplits,
    *,
    seed: int,
    num_clients: int = 5,
    samples_per_client: int = 1000,
    design: str = "conflicting",
    test_colours: str | None = None,
    pretrain_samples: int = 1000,
    validation_samples: int = 1000,
    resolution: int | None = None,
) -> SimpsonSplits:
    """Build Simpson-MNIST from MNIST, as the module docstring describes.

    Parameters
    ----------
    mnist : DatasetSplits
        Greyscale digits, images ``(n, 1, H, W)`` in ``[0, 1]`` labelled 0..9,
        e.g. ``load_dataset("mnist")``.
    seed : int
        Experiment seed; the same seed gives the same data.
    num_clients : int, optional
        Number of clients, >= 3 for the ``conflicting`` design, >= 2 for
        ``bands``. Default 5.
    samples_per_client : int, optional
        Samples of each client, >= ``MIN_SAMPLES_PER_CLIENT``. Default 1000.
    design : {"conflicting", "bands"}, optional
        Conflicting colour rules across clients (default), or the first
        design's disjoint bands.
    test_colours : {"independent", "pooled"} or None, optional
        Shade the test digits independently of the label, or as the pooled
        data. Default None: ``independent`` for ``conflicting``, ``pooled``
        for ``bands``.
    pretrain_samples : int, optional
        Size of the pretraining sample, >= 0. Default 1000.
    validation_samples : int, optional
        Size of the validation set, >= 0. Default 1000.
    resolution : int or None, optional
        Side, in pixels, the digits are averaged down to before being scaled
        back up (see :func:`coarsened`); from 1 to the image side. Default
        None keeps the full resolution.

    Returns
    -------
    SimpsonSplits
        Clients, test sets and pretraining sample, with shades and source rows.

    Raises
    ------
    ConfigError
        If a parameter is out of range (fields ``simpson.num_clients``,
        ``simpson.samples_per_client``, ``simpson.pretrain_samples``,
        ``simpson.validation_samples``,
        ``simpson.design``, ``simpson.test_colours``, ``simpson.resolution``)
        or MNIST's training split holds too few 1s or 7s for the request
        (field ``simpson.samples_per_client``).
    FedmosaicError
        If the images are not greyscale ``(n, 1, H, W)`` or the test split
        lacks digit 1 or 7.

    Examples
    --------
    >>> import numpy as np
    >>> images = np.random.default_rng(0).random((200, 1, 4, 4), dtype=np.float32)
    >>> digits = ArrayDataset(images, np.tile([1, 7], 100), num_classes=10)
    >>> splits = simpson_mnist(DatasetSplits(digits, digits, "toy"), seed=0, num_clients=3,
    ...                        samples_per_client=20, pretrain_samples=0, validation_samples=0)
    >>> all(s[c.y == 0].max() < s[c.y == 1].min() for s, c in zip(splits.shades, splits.clients))
    True
    >>> shade_label_correlation(np.concatenate(splits.shades),
    ...                         np.concatenate([c.y for c in splits.clients])) < 0
    True
    """
    _check_parameters(num_clients, samples_per_client, pretrain_samples, design, test_colours)
    if validation_samples < 0:
        raise ConfigError("simpson.validation_samples", f"must be >= 0 (got {validation_samples})")
    _check_images(mnist)
    _check_resolution(resolution, mnist.train.x.shape[-2:])
    test_colours = DEFAULT_TEST_COLOURS[design] if test_colours is None else test_colours
    shares = one_shares(num_clients)
    client_counts = _class_counts(np.full(num_clients, samples_per_client), shares)
    quotient, remainder = divmod(pretrain_samples, num_clients)
    pretrain_sizes = quotient + (np.arange(num_clients) < remainder)
    pretrain_counts = _class_counts(pretrain_sizes, shares)
    validation_counts = np.array([[validation_samples // 2, validation_samples - validation_samples // 2]])
    parts = _deal_rows(
        mnist.train.y, np.concatenate([client_counts, pretrain_counts, validation_counts]), seed, mnist.name
    )
    validation = _shuffled(parts[-1], derive_rng(seed, "simpson", "validation"))
    parts = parts[:-1]
    clients = [_shuffled(parts[k], derive_rng(seed, "simpson", "client", k)) for k in range(num_clients)]
    pretrain = _shuffled(_merge(parts[num_clients:]), derive_rng(seed, "simpson", "pretrain"))
    client_shades = [
        rule_shades(
            part.bands,
            part.labels,
            num_clients,
            design,
            derive_rng(seed, "simpson", "shades", k).random(len(part.labels)),
        )
        for k, part in enumerate(clients)
    ]
    pretrain_rng = derive_rng(seed, "simpson", "shades", "pretrain")
    if design == "conflicting":
        pretrain_shades = pretrain_rng.random(len(pretrain.labels))
    else:
        pretrain_shades = rule_shades(
            pretrain.bands, pretrain.labels, num_clients, design, pretrain_rng.random(len(pretrain.labels))
        )
    test_rows, test_labels = _digit_rows(mnist.test.y)
    test_shades = _test_shades(test_labels, shares, design, test_colours, derive_rng(seed, "simpson", "test"))
    validation_shades = _test_shades(
        validation.labels, shares, design, test_colours, derive_rng(seed, "simpson", "validation-shades")
    )
    return SimpsonSplits(
        clients=[
            _coloured(mnist.train, part.rows, part.labels, shades, resolution)
            for part, shades in zip(clients, client_shades, strict=True)
        ],
        test=_coloured(mnist.test, test_rows, test_labels, test_shades, resolution),
        pretrain=_coloured(mnist.train, pretrain.rows, pretrain.labels, pretrain_shades, resolution),
        shades=client_shades,
        test_shades=test_shades,
        pretrain_shades=pretrain_shades,
        sources=[part.rows for part in clients],
        pretrain_sources=pretrain.rows,
        test_sources=test_rows,
        colour_swap=_colour_swap(
            mnist.test,
            test_rows,
            test_labels,
            num_clients,
            design,
            resolution,
            derive_rng(seed, "simpson", "colour-swap"),
        ),
        validation=_coloured(mnist.train, validation.rows, validation.labels, validation_shades, resolution),
        validation_swap=_colour_swap(
            mnist.train,
            validation.rows,
            validation.labels,
            num_clients,
            design,
            resolution,
            derive_rng(seed, "simpson", "validation-swap"),
        ),
        validation_sources=validation.rows,
    )


def _check_parameters(
    num_clients: int, samples_per_client: int, pretrain_samples: int, design: str, test_colours: str | None
) -> None:
    """Raise a ConfigError naming the first parameter out of range."""
    if design not in DESIGNS:
        raise unknown_choice("simpson.design", "design", design, DESIGNS)
    if num_clients < MIN_CLIENTS[design]:
        raise ConfigError(
            "simpson.num_clients",
            f"must be >= {MIN_CLIENTS[design]} for the {design!r} design: "
            f"with fewer clients the pooled trend is not reversed (got {num_clients})",
        )
    if samples_per_client < MIN_SAMPLES_PER_CLIENT:
        raise ConfigError(
            "simpson.samples_per_client",
            f"must be >= {MIN_SAMPLES_PER_CLIENT} so that every client holds both digits (got {samples_per_client})",
        )
    if pretrain_samples < 0:
        raise ConfigError("simpson.pretrain_samples", f"must be >= 0 (got {pretrain_samples})")
    if test_colours is not None and test_colours not in TEST_COLOURS:
        raise unknown_choice("simpson.test_colours", "test colours", test_colours, TEST_COLOURS)


def _check_resolution(resolution: int | None, size: tuple[int, ...]) -> None:
    """Raise a ConfigError unless ``resolution`` is None or from 1 to the image side."""
    if resolution is not None and not 1 <= resolution <= min(size):
        raise ConfigError("simpson.resolution", f"must be from 1 to the image side {min(size)} (got {resolution})")


def _check_images(mnist: DatasetSplits) -> None:
    """Raise unless the images are greyscale and the test split holds both digits."""
    shape = mnist.train.x.shape
    if len(shape) != 4 or shape[1] != 1:
        raise FedmosaicError(f"Simpson-MNIST needs greyscale images of shape (n, 1, H, W) (got {shape})")
    for digit in DIGITS:
        if not np.any(mnist.test.y == digit):
            raise FedmosaicError(f"Simpson-MNIST needs digit {digit} in the test split of {mnist.name!r}; it has none")


def _class_counts(sizes: np.ndarray, shares: np.ndarray) -> np.ndarray:
    """Number of 1s and 7s of each group, shape ``(groups, 2)``."""
    ones = np.rint(sizes * shares).astype(np.int64)
    return np.stack([ones, sizes - ones], axis=1)


def _digit_rows(digits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows holding digit 1 or 7, in order, and their binary labels."""
    rows = np.flatnonzero(np.isin(digits, DIGITS))
    return rows, (digits[rows] == DIGITS[1]).astype(np.int64)


def _deal_rows(digits: np.ndarray, counts: np.ndarray, seed: int, name: str) -> list[_Part]:
    """Deal shuffled training rows of each digit into groups of the given class counts.

    Group ``g`` gets band ``g % K`` where ``K = len(counts) // 2`` (the band
    of a last odd group, the validation set, is never read).
    """
    rng = derive_rng(seed, "simpson", "rows")
    pieces = []
    for label, digit in enumerate(DIGITS):
        pool = rng.permutation(np.flatnonzero(digits == digit))
        needed = int(counts[:, label].sum())
        if needed > len(pool):
            raise ConfigError(
                "simpson.samples_per_client",
                f"the clients and the pretraining sample need {needed} training images of digit {digit} "
                f"but {name!r} has {len(pool)}; lower samples_per_client, pretrain_samples or validation_samples",
            )
        pieces.append(np.split(pool[:needed], np.cumsum(counts[:, label])[:-1]))
    num_bands = len(counts) // 2
    return [
        _Part(
            rows=np.concatenate([ones, sevens]),
            labels=np.repeat(np.arange(2, dtype=np.int64), [len(ones), len(sevens)]),
            bands=np.full(len(ones) + len(sevens), group % num_bands, dtype=np.int64),
        )
        for group, (ones, sevens) in enumerate(zip(*pieces, strict=True))
    ]


def _merge(parts: list[_Part]) -> _Part:
    """Concatenate parts in order."""
    return _Part(
        rows=np.concatenate([part.rows for part in parts]),
        labels=np.concatenate([part.labels for part in parts]),
        bands=np.concatenate([part.bands for part in parts]),
    )


def _shuffled(part: _Part, rng: np.random.Generator) -> _Part:
    """The same samples in a random order."""
    order = rng.permutation(len(part.rows))
    return _Part(part.rows[order], part.labels[order], part.bands[order])


def _test_shades(
    labels: np.ndarray, shares: np.ndarray, design: str, test_colours: str, rng: np.random.Generator
) -> np.ndarray:
    """Shades of the test digits: uniform, or a client's rule drawn by the pooled law of the client given the label."""
    if test_colours == "independent":
        return rng.random(len(labels))
    client_given_label = np.stack([shares / shares.sum(), (1.0 - shares) / (1.0 - shares).sum()])
    clients = np.empty(len(labels), dtype=np.int64)
    for label in (0, 1):
        mask = labels == label
        clients[mask] = rng.choice(len(shares), size=int(mask.sum()), p=client_given_label[label])
    return rule_shades(clients, labels, len(shares), design, rng.random(len(labels)))


def _colour_swap(
    source: ArrayDataset,
    rows: np.ndarray,
    labels: np.ndarray,
    num_clients: int,
    design: str,
    resolution: int | None,
    rng: np.random.Generator,
) -> ColourSwap:
    """The digits at ``rows`` at their own class's and the other class's shade, under one uniformly drawn client's rule."""
    clients = rng.integers(num_clients, size=len(labels))
    uniform = rng.random(len(labels))
    own = rule_shades(clients, labels, num_clients, design, uniform)
    swapped = rule_shades(clients, 1 - labels, num_clients, design, uniform)
    return ColourSwap(
        own=_coloured(source, rows, labels, own, resolution),
        swapped=_coloured(source, rows, labels, swapped, resolution),
        own_shades=own,
        swapped_shades=swapped,
    )


def _coloured(
    source: ArrayDataset,
    rows: np.ndarray,
    labels: np.ndarray,
    shades: np.ndarray,
    resolution: int | None,
) -> ArrayDataset:
    """Tint the greyscale images at ``rows`` (coarsened first if asked): ``rgb = intensity * colour(shade)``."""
    grey = source.x[rows] if resolution is None else coarsened(source.x[rows], resolution)
    rgb = grey * shade_colour(shades)[:, :, None, None]
    return ArrayDataset(rgb.astype(np.float32, copy=False), labels, num_classes=2)
