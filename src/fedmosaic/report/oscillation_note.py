"""Say so when a run's validation loss swung period-2: the federation did not settle, and its tested model may be a bad round's.

F-CMs records, with its final metrics, the longest stretch of rounds whose
validation task loss went high and low by turns
(``alternating_rounds``, :mod:`fedmosaic.methods.concepts.oscillation`). A
stretch of :data:`~fedmosaic.methods.concepts.oscillation.ROUNDS` or more is
an oscillation, not noise: the console and the report name the run.
"""

from collections.abc import Iterator, Mapping
from typing import Any

from fedmosaic.methods.concepts.oscillation import ROUNDS

METRIC = "alternating_rounds"
"""The final metric that counts a run's longest stretch of alternating rounds."""


def oscillation_notes(results: Mapping[str, Any]) -> list[str]:
    """One sentence per run (of a run's or a grid's results) whose validation loss swung period-2.

    Parameters
    ----------
    results : Mapping[str, Any]
        Content of a ``results.json``: runs with their ``final`` metrics, or a
        grid's points with their runs' final metrics.

    Returns
    -------
    list of str
        Empty when no run alternates for :data:`ROUNDS` rounds or more.

    Examples
    --------
    >>> runs = [{"name": "F-CMs", "final": {"alternating_rounds": 12.0}}, {"name": "b", "final": {"alternating_rounds": 3.0}}]
    >>> print(oscillation_notes({"runs": runs, "config": {"train": {"optimizer_state": "fresh"}}})[0])
    F-CMs: its validation task loss went high and low by turns for 12 rounds (a period-2 oscillation: the global model swings between two states instead of settling), so its tested model may come from a bad round; train.optimizer_state = "kept" (each client keeps its optimizer across rounds) settles it on insurance CGM.
    """
    fresh = results.get("config", {}).get("train", {}).get("optimizer_state") == "fresh"
    hint = (
        '; train.optimizer_state = "kept" (each client keeps its optimizer across rounds) settles it on insurance CGM'
        if fresh
        else ""
    )
    notes = []
    for name, final in _finals(results):
        rounds = final.get(METRIC)
        if rounds is not None and rounds >= ROUNDS:
            notes.append(
                f"{name}: its validation task loss went high and low by turns for {rounds:.0f} rounds (a period-2"
                " oscillation: the global model swings between two states instead of settling), so its tested"
                f" model may come from a bad round{hint}."
            )
    return notes


def _finals(results: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Each run's name (with its grid point's values) and final metrics."""
    for run in results.get("runs", []):
        yield run["name"], run.get("final", {})
    for point in results.get("points", []):
        where = ", ".join(f"{key}={value}" for key, value in point["values"].items())
        for run in point["runs"]:
            yield f"{run['name']} ({where})", run
