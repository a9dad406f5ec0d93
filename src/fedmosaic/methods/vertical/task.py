"""What a vertical method is built from."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from fedmosaic.data.vertical_data import VerticalData, VerticalSplit, test_metric

Protocol = Literal["tuned", "paper"]
"""How the baselines run: ours at full strength, or as the paper and its reference code run them."""
Unaligned = Literal["random", "majority"]
"""What the paper protocol's aligned-only baselines predict on a test row that not every party holds."""
Fallback = Literal["model", "random", "majority"]
"""A split baseline's prediction on rows not every party holds: its network's, a random class, the majority class."""


@dataclass(frozen=True)
class VerticalTask:
    """A vertical task: the data of every party and when to evaluate.

    The server logic is the active party (party 0: labels and block 0); client
    ``c`` is passive party ``c + 1``.

    Parameters
    ----------
    data : VerticalData
        Blocks, masks and labels of train and test splits.
    rounds : int
        Rounds of the federation (one epoch each).
    evaluate_every : int, default 1
        The federation's evaluation period; the server predicts the test split
        (which needs exchanges with the parties) inside those rounds.
    protocol : {"tuned", "paper"}, default "tuned"
        ``tuned``: every baseline predicts every row, PlugVFL with party
        dropout, ``passes`` epochs per round. ``paper``: Vanilla VFL, PlugVFL
        and FedHSSL predict only the test rows every party holds (elsewhere
        ``unaligned_prediction``), PlugVFL without dropout, one epoch per
        round (without a validation split, the last round is tested).
    unaligned_prediction : {"random", "majority"}, default "random"
        Under ``paper``: a uniformly random class (the LASER-VFL reference's
        decoupled Vanilla VFL), or the majority training class.

    Examples
    --------
    >>> from fedmosaic.data.vertical_data import VerticalSplit
    >>> import numpy as np
    >>> split = VerticalSplit([np.zeros((2, 1), np.float32)], np.ones((2, 1), bool), np.array([0, 1]))
    >>> task = VerticalTask(VerticalData(split, {"MCAR 0": split}, 2, "gaussian"), rounds=4, protocol="paper")
    >>> task.fallback, task.paper
    ('random', True)
    """

    data: VerticalData
    rounds: int
    evaluate_every: int = 1
    protocol: Protocol = "tuned"
    unaligned_prediction: Unaligned = "random"

    @property
    def paper(self) -> bool:
        """Whether the baselines run under the paper protocol."""
        return self.protocol == "paper"

    @property
    def fallback(self) -> Fallback:
        """What an aligned-only baseline predicts on rows not every party holds (``model``: no restriction)."""
        return self.unaligned_prediction if self.paper else "model"

    def evaluates(self, rnd: int) -> bool:
        """Whether the federation evaluates after round ``rnd``."""
        return rnd % self.evaluate_every == 0 or rnd == self.rounds

    def test_accuracies(self, accuracy: Callable[[str, VerticalSplit], float]) -> dict[str, float]:
        """``accuracy_<setting>`` for every test setting, and ``accuracy`` for the first.

        Parameters
        ----------
        accuracy : callable (split name, split) -> float
            Predicts one test split (the name is what messages carry).
        """
        metrics = {test_metric(label): accuracy(label, split) for label, split in self.data.tests.items()}
        metrics["accuracy"] = next(iter(metrics.values()))
        return metrics
