"""Which parties hold which rows: block-wise missingness MCAR, MAR and MNAR, and KEEP(k).

A mask is a boolean array ``present`` of shape ``(n, K)``: ``present[i, k]``
says whether party ``k`` holds row ``i``. Party 0 is the active party. Every
mechanism returns masks with at least one present party per row: rows drawn
with none present are drawn again, with the same probabilities, until one is
(the mask is conditioned on "at least one party present"). KEEP(k), for
analysis rather than training, gives every row exactly ``k`` parties.
``docs/methods/vertical.md`` states the definitions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

import numpy as np

from fedmosaic.errors import ConfigError

Mechanism = Literal["mcar", "mar", "mnar", "keep"]

MAR_RATES = {1: 0.3, 2: 0.6}
"""Average rate at which a passive block is missing at each MAR level."""

DEPENDENCE = 2.0
"""Slope of MAR and MNAR missingness on their standardized score (logit per standard deviation)."""

_SPEC = re.compile(r"^(mcar|mar|mnar|keep):([0-9]*\.?[0-9]+)$")


@dataclass(frozen=True)
class Missingness:
    """A missingness mechanism and its strength.

    Parameters
    ----------
    mechanism : {"mcar", "mar", "mnar", "keep"}
        Completely at random, at random given the active block, not at
        random (a block's own values), or exactly ``k`` parties per row.
    value : float
        MCAR: probability p in [0, 1) that a block is missing; MAR: the level,
        1 or 2 (passive blocks missing at an average rate 0.3 or 0.6); MNAR:
        the average rate in (0, 1) at which a block is missing; KEEP: the
        number ``k`` >= 1 of parties that hold each row, drawn uniformly.

    Examples
    --------
    >>> parse_missingness("mcar:0.5", "vertical.train_missing").label
    'MCAR 5'
    """

    mechanism: Mechanism
    value: float

    @property
    def label(self) -> str:
        """The paper's short name: ``MCAR 5``, ``MAR 2``, ``MNAR 9``; and ``KEEP 1``."""
        number = int(self.value) if self.mechanism in ("mar", "keep") else round(10 * self.value)
        return f"{self.mechanism.upper()} {number}"


def parse_missingness(text: str, field: str) -> Missingness:
    """Read ``mcar:<p>``, ``mar:<level>``, ``mnar:<rate>`` or ``keep:<k>``.

    Raises
    ------
    ConfigError
        Naming ``field`` and the accepted forms.

    Examples
    --------
    >>> parse_missingness("mnar:0.7", "vertical.train_missing")
    Missingness(mechanism='mnar', value=0.7)
    """
    accepted = "mcar:<p in [0, 1)>, mar:<1 or 2>, mnar:<rate in (0, 1)> or keep:<whole k >= 1>"
    match = _SPEC.match(text.strip().lower())
    if match is None:
        raise ConfigError(field, f"must be {accepted} (got {text!r})")
    mechanism, value = match.group(1), float(match.group(2))
    valid = {
        "mcar": 0 <= value < 1,
        "mar": value in MAR_RATES,
        "mnar": 0 < value < 1,
        "keep": value >= 1 and value.is_integer(),
    }[mechanism]
    if not valid:
        raise ConfigError(field, f"must be {accepted} (got {text!r})")
    return Missingness(mechanism, value)  # type: ignore[arg-type]


@dataclass(frozen=True, eq=False)
class MaskModel:
    """A MAR, MNAR or MCAR mechanism fitted once, to be applied to any rows of the same blocks.

    Fitting draws the random score directions and fixes the score's
    standardization and the calibrated offsets on the reference rows (the
    training rows), so the training and test masks of one mechanism come
    from one model: the same directions, centers, scales and offsets.

    Parameters
    ----------
    missingness : Missingness
        The mechanism (not KEEP).
    sources : tuple of int or None
        For each party, the block its score reads (MAR: the active block 0;
        MNAR: its own), or None where its probability is constant.
    directions, centers, scales, offsets : tuple
        Per party: the unit direction, the reference score's mean and standard
        deviation, and the offset ``b_k`` (MCAR: ``offsets`` hold the probability).
    """

    missingness: Missingness
    sources: tuple[int | None, ...]
    directions: tuple[np.ndarray | None, ...]
    centers: tuple[float, ...]
    scales: tuple[float, ...]
    offsets: tuple[float, ...]

    def probabilities(self, blocks: list[np.ndarray]) -> np.ndarray:
        """The probability that each block of each row of ``blocks`` is missing, float64 ``(n, K)``."""
        probabilities = np.zeros((len(blocks[0]), len(self.sources)))
        for party, source in enumerate(self.sources):
            direction = self.directions[party]
            if source is None or direction is None:
                probabilities[:, party] = self.offsets[party]
                continue
            score = (blocks[source].astype(np.float64) @ direction - self.centers[party]) / self.scales[party]
            probabilities[:, party] = _sigmoid(self.offsets[party] + DEPENDENCE * score)
        return probabilities


def fit_mechanism(blocks: list[np.ndarray], missingness: Missingness, rng: np.random.Generator) -> MaskModel:
    """Fit MCAR, MAR or MNAR on the reference ``blocks`` (see :func:`missing_probabilities`).

    Parameters
    ----------
    blocks : list of numpy.ndarray
        Each party's complete block of the reference rows.
    missingness : Missingness
        The mechanism and its strength (not KEEP).
    rng : numpy.random.Generator
        Source of the score directions: two fits with generators in the same
        state share their directions (MNAR 7 and MNAR 9 differ only in offsets).

    Returns
    -------
    MaskModel
    """
    if missingness.mechanism == "keep":
        raise ValueError("KEEP(k) fixes the number of parties per row, not a probability per block")
    num_parties = len(blocks)
    if missingness.mechanism == "mcar":
        none = (None,) * num_parties
        return MaskModel(
            missingness, none, none, (0.0,) * num_parties, (1.0,) * num_parties, (missingness.value,) * num_parties
        )
    if missingness.mechanism == "mar":
        sources: list[int | None] = [None] + [0] * (num_parties - 1)
        rate = MAR_RATES[int(missingness.value)]
    else:
        sources, rate = list(range(num_parties)), missingness.value
    directions: list[np.ndarray | None] = []
    centers, scales, offsets = [0.0] * num_parties, [1.0] * num_parties, [0.0] * num_parties
    for party, source in enumerate(sources):
        if source is None:
            directions.append(None)
            continue
        direction = rng.normal(size=(blocks[source].shape[1],))
        direction /= np.linalg.norm(direction)
        directions.append(direction)
        score = blocks[source].astype(np.float64) @ direction
        spread = float(score.std())
        centers[party], scales[party] = float(score.mean()), spread if spread > 0 else 1.0
        offsets[party] = _calibrated_offset((score - centers[party]) / scales[party], rate)
    return MaskModel(missingness, tuple(sources), tuple(directions), tuple(centers), tuple(scales), tuple(offsets))


def draw_mask(
    blocks: list[np.ndarray], missingness: Missingness, rng: np.random.Generator, mechanism: MaskModel | None = None
) -> np.ndarray:
    """Draw which parties hold each row under ``missingness``.

    Parameters
    ----------
    blocks : list of numpy.ndarray
        Each party's complete block, shape ``(n, d_k)``; party 0 is active.
    missingness : Missingness
        The mechanism.
    rng : numpy.random.Generator
        Source of randomness (also of the MAR and MNAR score directions when
        ``mechanism`` is None).
    mechanism : MaskModel or None, default None
        A mechanism fitted on reference rows (:func:`fit_mechanism`), used
        instead of fitting one on ``blocks``; ignored for KEEP.

    Returns
    -------
    numpy.ndarray
        ``present``, bool of shape ``(n, K)``, at least one True per row.

    Raises
    ------
    ValueError
        KEEP(k) with more than ``K`` parties (the configuration checks this first).

    Examples
    --------
    >>> import numpy as np
    >>> blocks = [np.zeros((4, 2)), np.zeros((4, 3))]
    >>> draw_mask(blocks, Missingness("mcar", 0.0), np.random.default_rng(0)).all()
    np.True_
    """
    if missingness.mechanism == "keep":
        return _keep(len(blocks[0]), len(blocks), int(missingness.value), rng)
    model = mechanism if mechanism is not None else fit_mechanism(blocks, missingness, rng)
    return _at_least_one(model.probabilities(blocks), rng)


def missing_probabilities(blocks: list[np.ndarray], missingness: Missingness, rng: np.random.Generator) -> np.ndarray:
    """The probability that each block of each row is missing (before conditioning), for MCAR, MAR and MNAR.

    - MCAR(p): ``p`` for every block.
    - MAR(level): 0 for the active block; for passive block ``k``,
      ``sigmoid(b_k + 2 s_ik)`` where ``s_ik`` is the active block of row
      ``i`` projected on a random unit direction (one per ``k``) and
      standardized over the rows, and ``b_k`` makes the average over rows
      equal ``MAR_RATES[level]``.
    - MNAR(rate): for every block, ``sigmoid(b_k + 2 t_ik)`` where ``t_ik``
      is block ``k``'s own values projected on a random unit direction and
      standardized, and ``b_k`` makes the average ``rate``.

    The mechanism is fitted on ``blocks`` themselves (:func:`fit_mechanism`).

    Returns
    -------
    numpy.ndarray
        float64 of shape ``(n, K)``.
    """
    return fit_mechanism(blocks, missingness, rng).probabilities(blocks)


def _calibrated_offset(score: np.ndarray, rate: float) -> float:
    """The ``b`` found by bisection for which ``sigmoid(b + DEPENDENCE * score)`` averages ``rate``."""
    low, high = -50.0, 50.0
    for _ in range(100):
        middle = (low + high) / 2
        if _sigmoid(middle + DEPENDENCE * score).mean() < rate:
            low = middle
        else:
            high = middle
    return (low + high) / 2


def _sigmoid(x: np.ndarray) -> np.ndarray:
    result: np.ndarray = 1 / (1 + np.exp(-x))
    return result


def _at_least_one(probabilities: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    present = rng.random(probabilities.shape) >= probabilities
    empty = np.flatnonzero(~present.any(axis=1))
    while len(empty):
        present[empty] = rng.random((len(empty), probabilities.shape[1])) >= probabilities[empty]
        empty = empty[~present[empty].any(axis=1)]
    return present


def _keep(n: int, num_parties: int, keep: int, rng: np.random.Generator) -> np.ndarray:
    """Every row held by ``keep`` parties drawn uniformly without replacement."""
    if keep > num_parties:
        raise ValueError(f"cannot keep {keep} of {num_parties} parties")
    keys = rng.random((n, num_parties))
    return keys <= np.partition(keys, keep - 1, axis=1)[:, keep - 1 : keep]
