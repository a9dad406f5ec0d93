"""Shapes: small generated images whose concepts are what they show, for concept models on images.

A coloured shape on a plain background, 16 x 16 RGB. Six concepts are drawn
from a small causal network (:func:`shapes_network`, a pgmpy network like the
bnlearn ones) and each is visible in the image: the ``shape`` (circle,
square, triangle), its ``colour`` (red, green, blue), its ``size`` (small,
large), the ``row`` (top, bottom) and ``side`` (left, right) of the image it
sits in, and the ``background`` (dark, light). The task ``accept`` is not
drawn: it depends on the colour and the position alone, by a rule that
holds nine times in ten::

    shape -> colour, shape -> size, size -> row, colour -> side,
    background -> side, colour -> accept, row -> accept, side -> accept

    accept is "yes" (with probability 0.9) where the shape is red and at the top,
    blue and on the right, or green, at the bottom and on the left; else "no" (0.9).

Each picture is drawn with its own jitter (position within its quarter,
radius within its size, colour and brightness) and Gaussian pixel noise, so
concepts are read from the image, not copied from it. :func:`shape_splits`
draws train, validation and test splits (70/10/20) as the bnlearn concept
data are, with the network's Bayes-optimal accuracy as the task's ceiling.
"""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING

import numpy as np

from fedmosaic.data.bayesnet import forward_sample, network_splits, split_sizes
from fedmosaic.data.concept_splits import ConceptDataset, ConceptSplits
from fedmosaic.errors import ConfigError
from fedmosaic.seeding import derive_rng

if TYPE_CHECKING:  # pgmpy's models cost seconds to import: imported where the network is built
    from pgmpy.models import DiscreteBayesianNetwork

__all__ = [
    "DEFAULT_SHAPE_SAMPLES",
    "IMAGE_SHAPE",
    "PIXEL_NOISE",
    "SHAPES_TASK",
    "render",
    "shape_splits",
    "shapes_network",
]

IMAGE_SHAPE = (3, 16, 16)
"""Channels, height and width of every image."""

SHAPES_TASK = "accept"
"""The task node of the shapes network."""

DEFAULT_SHAPE_SAMPLES = 5000
"""Images drawn in all splits together unless ``data.samples`` says otherwise."""

PIXEL_NOISE = 0.15
"""Standard deviation of the Gaussian noise on every pixel channel (intensities in [0, 1])."""

STATES: dict[str, list[str]] = {
    "shape": ["circle", "square", "triangle"],
    "colour": ["red", "green", "blue"],
    "size": ["small", "large"],
    "row": ["top", "bottom"],
    "side": ["left", "right"],
    "background": ["dark", "light"],
    "accept": ["no", "yes"],
}
"""Every node's states, in code order; the nodes in column order."""

RULE_HOLDS = 0.9
"""Probability that ``accept`` follows its rule."""

_COLOURS = np.array([[0.9, 0.2, 0.2], [0.2, 0.85, 0.25], [0.25, 0.3, 0.95]])
"""Mean RGB of red, green and blue (intensities in [0, 1])."""
_BACKGROUNDS = np.array([0.12, 0.6])
"""Mean grey level of the dark and the light background."""
_RADII = np.array([[1.8, 2.6], [3.2, 4.2]])
"""Smallest and largest radius in pixels of a small and a large shape."""
_MIN_SAMPLES = 10


def _accepted(colour: int, row: int, side: int) -> bool:
    """The task's rule: red at the top, blue on the right, or green at the bottom left."""
    red, green, blue = (colour == code for code in range(3))
    top, left = row == 0, side == 0
    return (red and top) or (blue and not left) or (green and not top and left)


@functools.cache
def shapes_network() -> DiscreteBayesianNetwork:
    """The causal network the concepts are drawn from (a fresh model is cached: do not modify it).

    Examples
    --------
    >>> model = shapes_network()
    >>> sorted(model.get_parents("accept")), sorted(model.get_parents("side"))
    (['colour', 'row', 'side'], ['background', 'colour'])
    """
    from pgmpy.factors.discrete import TabularCPD
    from pgmpy.models import DiscreteBayesianNetwork

    # P(accept = yes | colour, row, side), the last parent varying fastest (pgmpy's column order)
    yes = [RULE_HOLDS if _accepted(c, r, s) else 1 - RULE_HOLDS for c in range(3) for r in range(2) for s in range(2)]
    tables = {
        "shape": ([[1 / 3], [1 / 3], [1 / 3]], []),
        "background": ([[0.5], [0.5]], []),
        "colour": ([[0.6, 0.2, 0.2], [0.2, 0.6, 0.2], [0.2, 0.2, 0.6]], ["shape"]),
        "size": ([[0.7, 0.5, 0.3], [0.3, 0.5, 0.7]], ["shape"]),
        "row": ([[0.7, 0.3], [0.3, 0.7]], ["size"]),
        # P(side = left | colour, background), background varying fastest
        "side": ([[0.8, 0.4, 0.5, 0.2, 0.3, 0.6], [0.2, 0.6, 0.5, 0.8, 0.7, 0.4]], ["colour", "background"]),
        "accept": ([[1 - p for p in yes], yes], ["colour", "row", "side"]),
    }
    model = DiscreteBayesianNetwork([(parent, node) for node, (_, parents) in tables.items() for parent in parents])
    model.add_nodes_from(STATES)
    for node, (values, parents) in tables.items():
        model.add_cpds(
            TabularCPD(
                node,
                len(STATES[node]),
                values,
                evidence=parents or None,
                evidence_card=[len(STATES[p]) for p in parents] or None,
                state_names={name: STATES[name] for name in (node, *parents)},
            )
        )
    model.check_model()
    return model


def render(concepts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Draw one image per row of concept codes.

    Parameters
    ----------
    concepts : np.ndarray
        int64 codes, shape ``(n, 7)``, columns in the order of :data:`STATES`.
    rng : np.random.Generator
        Source of each picture's jitter and noise.

    Returns
    -------
    np.ndarray
        float32, shape ``(n, 3, 16, 16)``: intensities in [0, 1] with the pixel
        noise added, then mapped to [-1, 1] (``2 * value - 1``).

    Examples
    --------
    >>> import numpy as np
    >>> image = render(np.array([[0, 0, 1, 0, 0, 1, 1]]), np.random.default_rng(0))
    >>> image.shape, bool(image[0, 0, 4, 4] > image[0, 2, 4, 4])  # a large red circle at the top left
    ((1, 3, 16, 16), True)
    """
    column = {name: position for position, name in enumerate(STATES)}
    shape, colour, size, row, side, background = (concepts[:, column[name]] for name in list(STATES)[:6])
    n, (_, height, width) = len(concepts), IMAGE_SHAPE
    low, high = _RADII[size, 0], _RADII[size, 1]
    radius = low + (high - low) * rng.random(n)
    # the centre lies in its quarter's middle half: (4 +- 2) or (12 +- 2) pixels, minus half a pixel
    centre_y = 4 + 8 * row + rng.uniform(-1.5, 1.5, n) - 0.5
    centre_x = 4 + 8 * side + rng.uniform(-1.5, 1.5, n) - 0.5
    dy = np.arange(height)[None, :, None] - centre_y[:, None, None]
    dx = np.arange(width)[None, None, :] - centre_x[:, None, None]
    r = radius[:, None, None]
    masks = np.stack(
        [
            dx**2 + dy**2 <= r**2,  # circle
            np.maximum(np.abs(dx), np.abs(dy)) <= r * math.sqrt(math.pi) / 2,  # square of the circle's area
            (dy <= 0.8 * r) & (np.abs(dx) <= (dy + r) * 0.7),  # triangle, apex up
        ]
    )[shape, np.arange(n)]
    paint = np.clip(_COLOURS[colour] + rng.uniform(-0.1, 0.1, (n, 3)), 0, 1)
    grey = _BACKGROUNDS[background] + rng.uniform(-0.05, 0.05, n)
    image = np.where(masks[:, None], paint[:, :, None, None], grey[:, None, None, None])
    noisy: np.ndarray = image + rng.normal(0.0, PIXEL_NOISE, image.shape)
    return (2 * noisy - 1).astype(np.float32)


def shape_splits(*, seed: int, n_samples: int | None = None) -> ConceptSplits:
    """Draw the shapes' train, validation and test splits (70/10/20), images as flattened rows.

    Each split's concepts are a forward sampling of :func:`shapes_network`
    from a generator derived from ``(seed, split)``, and its images are drawn
    from another; the same seed gives the same splits.

    Parameters
    ----------
    seed : int
        Seed of every draw.
    n_samples : int or None, optional
        Images in all splits together (at least 10); None takes
        :data:`DEFAULT_SHAPE_SAMPLES`.

    Returns
    -------
    ConceptSplits
        ``x`` of shape ``(n, 768)`` (:data:`IMAGE_SHAPE` flattened), every
        concept but the task rendered, the task :data:`SHAPES_TASK`.

    Raises
    ------
    ConfigError
        Naming ``data.samples``, if ``n_samples`` is not an integer >= 10.

    Examples
    --------
    >>> splits = shape_splits(seed=0, n_samples=100)
    >>> len(splits.train), len(splits.val), len(splits.test), splits.train.x.shape[1]
    (70, 10, 20, 768)
    """
    n_samples = DEFAULT_SHAPE_SAMPLES if n_samples is None else n_samples
    if isinstance(n_samples, bool) or not isinstance(n_samples, int) or n_samples < _MIN_SAMPLES:
        raise ConfigError("data.samples", f"must be an integer >= {_MIN_SAMPLES} (got {n_samples!r})")
    model = shapes_network()
    names = tuple(STATES)
    cardinalities = {name: len(states) for name, states in STATES.items()}
    datasets = {}
    for split, size in split_sizes(n_samples).items():
        # forward_sample gives columns in model.nodes() order: put them in STATES' order
        drawn = forward_sample(model, size, derive_rng(seed, "shapes", "concepts", split))
        codes = drawn[:, [list(model.nodes()).index(name) for name in names]]
        images = render(codes, derive_rng(seed, "shapes", "images", split))
        datasets[split] = ConceptDataset(images.reshape(size, -1), codes, names, SHAPES_TASK, cardinalities, STATES)
    return network_splits(model, datasets, names[:-1])
