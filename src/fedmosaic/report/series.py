"""Read metric and communication values out of a results dictionary.

A results dictionary is the content of ``results.json``. Metric names are
open-ended; a key ending in :data:`STD_SUFFIX` holds the standard deviation of
the key without the suffix.
"""

from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np

STD_SUFFIX = "_std"


class Series(NamedTuple):
    """One metric of one run, over the rounds that report it.

    Attributes
    ----------
    rounds : numpy.ndarray
        Round numbers, in history order.
    values : numpy.ndarray
        The metric at each round.
    stds : numpy.ndarray
        Its standard deviation at each round, NaN where none is reported.
    """

    rounds: np.ndarray
    values: np.ndarray
    stds: np.ndarray


class Traffic(NamedTuple):
    """Bytes sent at each round of one run.

    Attributes
    ----------
    rounds : numpy.ndarray
        Round numbers, in history order.
    up : numpy.ndarray
        Bytes sent by clients to the server.
    down : numpy.ndarray
        Bytes sent by the server to clients.
    """

    rounds: np.ndarray
    up: np.ndarray
    down: np.ndarray


def std_key(metric: str) -> str:
    """Return the key that holds the standard deviation of ``metric``."""
    return metric + STD_SUFFIX


def mean_std(metrics: Mapping[str, float], metric: str) -> tuple[float, float | None] | None:
    """Return ``(value, std)`` of ``metric``, std being None when not reported.

    Parameters
    ----------
    metrics : Mapping[str, float]
        A ``final`` or per-round ``metrics`` mapping.
    metric : str
        Metric name, without :data:`STD_SUFFIX`.

    Returns
    -------
    tuple[float, float | None] | None
        None when ``metrics`` does not hold ``metric``.
    """
    if metric not in metrics:
        return None
    return metrics[metric], metrics.get(std_key(metric))


def final_metric_names(results: Mapping[str, Any]) -> list[str]:
    """Return every metric in any run's final metrics, std keys excluded.

    Names keep the order of their first appearance, run after run.
    """
    names: dict[str, None] = {}
    for run in results["runs"]:
        names.update((key, None) for key in run["final"] if not key.endswith(STD_SUFFIX))
    return list(names)


def metric_series_by_run(results: Mapping[str, Any], metric: str) -> dict[str, Series]:
    """Return the per-round values of ``metric`` for each run that reports it.

    Rounds without the metric (skipped, or not evaluated) are left out; runs
    where no round reports it are absent from the result.
    """
    by_run: dict[str, Series] = {}
    for run in results["runs"]:
        rounds: list[int] = []
        values: list[float] = []
        stds: list[float] = []
        for entry in run["history"]:
            found = mean_std(entry["metrics"], metric)
            if found is None:
                continue
            value, std = found
            rounds.append(entry["round"])
            values.append(value)
            stds.append(np.nan if std is None else std)
        if rounds:
            by_run[run["name"]] = Series(
                rounds=np.array(rounds, dtype=float),
                values=np.array(values, dtype=float),
                stds=np.array(stds, dtype=float),
            )
    return by_run


def final_by_run(results: Mapping[str, Any], metric: str) -> dict[str, tuple[float, float | None]]:
    """Return ``(value, std)`` of the final ``metric`` for each run that reports it."""
    return {
        run["name"]: value_std for run in results["runs"] if (value_std := mean_std(run["final"], metric)) is not None
    }


def traffic_by_run(results: Mapping[str, Any]) -> dict[str, Traffic]:
    """Return the bytes sent at each round, for each run with at least one round."""
    return {
        run["name"]: Traffic(
            rounds=np.array([entry["round"] for entry in run["history"]], dtype=float),
            up=np.array([entry["bytes_up"] for entry in run["history"]], dtype=float),
            down=np.array([entry["bytes_down"] for entry in run["history"]], dtype=float),
        )
        for run in results["runs"]
        if run["history"]
    }
