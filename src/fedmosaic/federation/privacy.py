"""Client-level differential privacy: the Gaussian mechanism on updates, and its accounting.

:class:`GaussianMechanism` is an aggregation rule (it plugs in where the mean
does). Each client's update is clipped module by module so that its whole
L2 norm is at most ``clip_norm``: with ``M`` floating modules in the model
sent, each module's update is bounded by ``clip_norm / sqrt(M)``. The
clipped updates are averaged without weights (a weight would change the
sensitivity) and each name's sum receives Gaussian noise of standard
deviation ``noise_multiplier * clip_norm`` before it is divided by the
number of clients that uploaded it. A module uploaded by only some clients
(F-CMs) is therefore averaged over those, with the noise its own sum needs,
and one client's whole contribution to all sums together stays within
``clip_norm``.

The privacy spent is computed by Opacus's RDP accountant
(:func:`client_level_epsilon`): one step per round whose server logic
aggregated through the mechanism (a round without a noised aggregation
releases nothing and is not accounted), with sampling rate the share of the
available clients selected.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from typing_extensions import override

from fedmosaic.errors import ConfigError
from fedmosaic.federation.aggregate import weighted_average
from fedmosaic.federation.robust import Aggregator, Contribution, clip_update, module_of

if TYPE_CHECKING:
    from fedmosaic.federation.record import RoundRecord

SAMPLE_RATE = "dp_sample_rate"


class GaussianMechanism(Aggregator):
    """Clipped, unweighted mean of the updates plus Gaussian noise on each name's sum.

    Parameters
    ----------
    clip_norm : float
        Bound on the L2 norm of one client's whole update (> 0).
    noise_multiplier : float
        Noise standard deviation in units of ``clip_norm`` (>= 0; 0 gives
        the plain mean of the clipped updates).

    Examples
    --------
    >>> import numpy as np
    >>> parts = [({"l.w": np.array([3.0, 4.0])}, 5.0), ({"l.w": np.array([0.0, 0.0])}, 1.0)]
    >>> np.round(GaussianMechanism(1.0, 0.0).aggregate(parts, {"l.w": np.zeros(2)}, None)["l.w"], 6).tolist()
    [0.3, 0.4]
    """

    def __init__(self, clip_norm: float, noise_multiplier: float) -> None:
        if not clip_norm > 0:
            raise ValueError(f"clip_norm must be > 0, got {clip_norm}")
        if not noise_multiplier >= 0:
            raise ValueError(f"noise_multiplier must be >= 0, got {noise_multiplier}")
        self.clip_norm = clip_norm
        self.noise_multiplier = noise_multiplier

    @property
    def adds_noise(self) -> bool:
        """Whether noise is drawn (``noise_multiplier > 0``)."""
        return self.noise_multiplier > 0

    def module_bound(self, reference: Mapping[str, np.ndarray]) -> float:
        """The norm bound of one module's update: ``clip_norm / sqrt(M)``."""
        modules = {module_of(n) for n, a in reference.items() if a.dtype.kind == "f"}
        return self.clip_norm / math.sqrt(max(1, len(modules)))

    @override
    def aggregate(
        self,
        contributions: Sequence[Contribution],
        reference: Mapping[str, np.ndarray],
        rng: np.random.Generator | None,
    ) -> dict[str, np.ndarray]:
        bound = self.module_bound(reference)
        clipped = [clip_update(arrays, reference, bound) for arrays, _ in contributions]
        mean = weighted_average([(arrays, 1.0) for arrays in clipped])
        if self.noise_multiplier == 0:
            return mean
        if rng is None:
            raise ValueError("the Gaussian mechanism needs a random generator")
        holders = {name: sum(name in arrays for arrays in clipped) for name in mean}
        std = self.noise_multiplier * self.clip_norm
        for name, array in mean.items():
            if name in reference and array.dtype.kind == "f":
                noise = rng.normal(0.0, std / holders[name], size=array.shape)
                mean[name] = (array.astype(np.float64) + noise).astype(array.dtype)
        return mean


@dataclass(frozen=True)
class PrivacyBudget:
    """What the accountant needs: the mechanism's noise multiplier and the target delta.

    Parameters
    ----------
    noise_multiplier : float
        As in the :class:`GaussianMechanism` (> 0).
    delta : float
        Target delta, in (0, 1).
    """

    noise_multiplier: float
    delta: float

    def spent(self, history: Sequence[RoundRecord], sample_rate: float) -> dict[str, float]:
        """The round's privacy metrics: this round's sample rate and (epsilon, delta) spent so far.

        The rates of earlier aggregated rounds are read back from ``history``,
        so a resumed run accounts exactly like an uninterrupted one.
        """
        rates = [r.metrics[SAMPLE_RATE] for r in history if r.status == "ok" and SAMPLE_RATE in r.metrics]
        epsilon = client_level_epsilon(self.noise_multiplier, [*rates, sample_rate], self.delta)
        return {SAMPLE_RATE: sample_rate, "dp_epsilon": epsilon, "dp_delta": self.delta}


def client_level_epsilon(noise_multiplier: float, sample_rates: Sequence[float], delta: float) -> float:
    """Epsilon spent after one Gaussian step per entry of ``sample_rates`` (Opacus's RDP accountant).

    Parameters
    ----------
    noise_multiplier : float
        Noise standard deviation in units of the clipping bound (> 0).
    sample_rates : sequence of float
        Each aggregated round's share of clients selected, in (0, 1].
    delta : float
        Target delta, in (0, 1).

    Returns
    -------
    float
        Epsilon (0 before any step, inf without noise).

    Examples
    --------
    >>> round(client_level_epsilon(1.0, [0.1] * 10, 1e-5), 3) > 0
    True
    """
    if not sample_rates:
        return 0.0
    if noise_multiplier == 0:
        return math.inf
    from opacus.accountants import RDPAccountant  # imported on use: it loads torch

    accountant = RDPAccountant()
    for rate in sample_rates:
        accountant.step(noise_multiplier=noise_multiplier, sample_rate=rate)
    return float(accountant.get_epsilon(delta))


def noise_for_epsilon(epsilon: float, delta: float, sample_rate: float, steps: int) -> float:
    """The noise multiplier that spends ``epsilon`` in ``steps`` rounds (Opacus's search, RDP).

    Raises
    ------
    ConfigError
        Naming ``privacy.target_epsilon``, when no noise multiplier up to
        Opacus's largest spends so little.
    """
    from opacus.accountants.utils import get_noise_multiplier

    try:
        with warnings.catch_warnings():  # the accountant's advice on its orders of alpha, not the user's business
            warnings.simplefilter("ignore", UserWarning)
            noise = get_noise_multiplier(
                target_epsilon=epsilon, target_delta=delta, sample_rate=sample_rate, steps=steps, accountant="rdp"
            )
    except ValueError as error:
        raise ConfigError(
            "privacy.target_epsilon",
            f"no noise spends only {epsilon:g} over {steps} rounds at sample rate {sample_rate:g} ({error});"
            " raise it or run fewer rounds",
        ) from None
    return float(noise)
