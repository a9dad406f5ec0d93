"""What an epsilon in a report covers, and what leaves the clients without noise beside it.

A run with differential privacy reports the epsilon it has spent
(``dp_epsilon``: client-level DP of the aggregated model updates;
``dp_sgd_epsilon_max``: local DP-SGD of each client's training). That
epsilon covers the model updates only: the report says so, and names what
else the method sends without noise, so that nobody reads the number as a
guarantee on everything that left a site.
"""

from collections.abc import Mapping
from typing import Any

UNNOISED: dict[str, str] = {
    "fcm": (
        "each client's confidence matrix (its beliefs about the graph's edges; randomized response only when"
        " graph_epsilon is set), its sample counts and its training and validation losses"
    ),
}
"""What a method sends without noise beside its model updates, by method."""
DEFAULT_UNNOISED = "each client's sample count and training loss"
"""What every other method sends without noise beside its model updates."""

MECHANISMS = {
    "dp_epsilon": "client-level differential privacy of the aggregated model updates",
    "dp_sgd_epsilon_max": "local DP-SGD of each client's training",
}
"""The round metrics that report a spent epsilon, and the mechanism each accounts for."""


def privacy_notes(results: Mapping[str, Any]) -> list[str]:
    """One sentence per private run: what its epsilon covers and what leaves without noise.

    Examples
    --------
    >>> run = {"name": "F-CMs", "method": "fcm", "history": [{"metrics": {"dp_epsilon": 2.0}}]}
    >>> print(privacy_notes({"runs": [run, {**run, "name": "plain", "history": [{"metrics": {}}]}]})[0])
    F-CMs: its epsilon covers client-level differential privacy of the aggregated model updates only; each client's confidence matrix (its beliefs about the graph's edges; randomized response only when graph_epsilon is set), its sample counts and its training and validation losses leave without noise, outside that epsilon.
    """
    notes = []
    for run in results["runs"]:
        spent = {key for row in run.get("history", []) for key in row.get("metrics", {}) if key in MECHANISMS}
        if not spent:
            continue
        covered = " and ".join(MECHANISMS[key] for key in MECHANISMS if key in spent)
        unnoised = UNNOISED.get(run["method"], DEFAULT_UNNOISED)
        notes.append(
            f"{run['name']}: its epsilon covers {covered} only; {unnoised} leave without noise, outside that epsilon."
        )
    return notes
