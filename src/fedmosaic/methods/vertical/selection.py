"""Model selection and early stopping of the vertical methods on the validation split."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

SELECTION = "selection."


@dataclass
class Selection:
    """The round with the best validation accuracy so far, and whether training has stopped.

    Parameters
    ----------
    patience : int or None
        Stop after this many validated rounds without a strictly better
        validation accuracy; None never stops.
    best_round : int, default 0
        The selected round (0: none validated yet).
    best_accuracy : float, default -1.0
        Its validation accuracy (-1: none yet).
    last_round : int, default 0
        The last validated round.
    stopped : bool, default False
        Whether training has stopped early.

    Examples
    --------
    >>> selection = Selection(patience=2)
    >>> [selection.offer(r, a) for r, a in [(1, 0.5), (2, 0.7), (3, 0.6), (4, 0.7)]]
    [True, True, False, False]
    >>> selection.best_round, selection.stopped
    (2, True)
    """

    patience: int | None
    best_round: int = 0
    best_accuracy: float = -1.0
    last_round: int = 0
    stopped: bool = False

    def offer(self, rnd: int, accuracy: float) -> bool:
        """Record round ``rnd``'s validation accuracy; True when it is the new best (the caller keeps the model)."""
        self.last_round = rnd
        improved = accuracy > self.best_accuracy
        if improved:
            self.best_round, self.best_accuracy = rnd, accuracy
        if self.patience is not None and self.last_round - self.best_round >= self.patience:
            self.stopped = True
        return improved

    def config(self) -> dict[str, Any]:
        """Checkpointable config entries."""
        return {
            f"{SELECTION}best_round": self.best_round,
            f"{SELECTION}best_accuracy": self.best_accuracy,
            f"{SELECTION}last_round": self.last_round,
            f"{SELECTION}stopped": self.stopped,
        }

    def load(self, config: Mapping[str, Any]) -> None:
        """Inverse of :meth:`config`."""
        self.best_round = int(config[f"{SELECTION}best_round"])
        self.best_accuracy = float(config[f"{SELECTION}best_accuracy"])
        self.last_round = int(config[f"{SELECTION}last_round"])
        self.stopped = bool(config[f"{SELECTION}stopped"])

    def record(self, validation_rows: int, steps: int, last_trained_round: int) -> dict[str, Any]:
        """What a run reports: validation size, the selected round (the last trained one without validation) and steps."""
        selected = self.best_round if validation_rows else last_trained_round
        return {
            "validation_rows": validation_rows,
            "selected_round": selected,
            "validation_accuracy": self.best_accuracy if validation_rows else None,
            "stopped_early": self.stopped,
            "optimizer_steps": steps,
        }
