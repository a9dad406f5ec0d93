"""Running a loaded model over a whole input file in chunks, with progress, into one table."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd

from fedmosaic.models.card import ModelFileError
from fedmosaic.models.inputs import checked_inputs
from fedmosaic.models.loaded import LoadedModel

CHUNK_ROWS = 4096
"""Rows predicted at a time; an input of more rows shows progress."""


def parse_settings(settings: list[str]) -> dict[str, str]:
    """``--set concept=value`` options as a mapping.

    Raises
    ------
    ModelFileError
        If none is given, one lacks ``=``, or a concept repeats.

    Examples
    --------
    >>> parse_settings(["smoke=yes", "asia=no"])
    {'smoke': 'yes', 'asia': 'no'}
    """
    if not settings:
        raise ModelFileError("--set: give at least one CONCEPT=VALUE")
    values: dict[str, str] = {}
    for setting in settings:
        concept, sep, value = setting.partition("=")
        if not sep or not concept.strip() or not value.strip():
            raise ModelFileError(f"--set: expected CONCEPT=VALUE (got {setting!r})")
        if concept.strip() in values:
            raise ModelFileError(f"--set: {concept.strip()!r} is set twice")
        values[concept.strip()] = value.strip()
    return values


def prediction_table(
    model: LoadedModel,
    inputs: Any,
    values: Mapping[str, Any] | None = None,
    *,
    advance: Callable[[int, int], None] | None = None,
) -> pd.DataFrame:
    """Probabilities for every row of ``inputs``, one column per probability.

    Parameters
    ----------
    model : LoadedModel
        The model.
    inputs : numpy.ndarray or pandas.DataFrame
        Checked whole against the card first, then predicted
        :data:`CHUNK_ROWS` rows at a time.
    values : mapping of str to value or None, default None
        Concepts to set, one category each for every row
        (:meth:`LoadedModel.intervene`); None predicts.
    advance : callable (rows done, rows in all) or None
        Called after each chunk.
    """
    raw = {key: value for key, value in model.card["inputs"].items() if key != "standardise"}
    array = checked_inputs(inputs, raw)  # checked whole, in the card's column order; the model standardises each chunk
    tables = []
    for start in range(0, len(array), CHUNK_ROWS):
        chunk = array[start : start + CHUNK_ROWS]
        prediction = model.predict(chunk) if values is None else model.intervene(chunk, values)
        tables.append(prediction.table())
        if advance is not None:
            advance(min(start + CHUNK_ROWS, len(array)), len(array))
    return pd.concat(tables, ignore_index=True) if len(tables) > 1 else tables[0]
