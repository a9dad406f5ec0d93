"""What a vertical method is built from."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from fedmosaic.data.vertical_data import VerticalData, VerticalSplit, test_metric


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
    """

    data: VerticalData
    rounds: int
    evaluate_every: int = 1

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
