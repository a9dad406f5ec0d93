"""A site's graph belief: a small CSV of ``parent,child,confidence`` rows."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from fedmosaic.data.confidence import ConfidenceMatrix
from fedmosaic.data.tables.read import read_table
from fedmosaic.errors import ConfigError, FedmosaicError

BELIEF_COLUMNS = ["parent", "child", "confidence"]
"""The columns of a graph belief file."""


def read_belief(path: str, names: tuple[str, ...], field: str) -> ConfidenceMatrix:
    r"""The confidence matrix a site believes in, over the concepts it labels.

    A row ``parent,child,confidence`` is the belief in the edge
    ``parent -> child``; pairs without a row have belief 0. Each confidence
    is in [0, 1] and, for every pair, ``A_ij + A_ji <= 1`` (the rest is the
    belief in no edge).

    Parameters
    ----------
    path : str
        The CSV file.
    names : tuple of str
        The concepts the site labels (the task may be one).
    field : str
        The configuration field that names the file.

    Raises
    ------
    ConfigError
        For a missing column, an unknown or repeated pair, a confidence that
        is not a number in [0, 1], or two directions summing to more than 1.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> file = pathlib.Path(tempfile.mkdtemp()) / "graph.csv"
    >>> _ = file.write_text("parent,child,confidence\nsmoke,lung,0.9\n")
    >>> read_belief(str(file), ("lung", "smoke"), "tables.sites.1.graph").values.tolist()
    [[0.0, 0.0], [0.9, 0.0]]
    """
    table = read_table(path, field)
    table.require(BELIEF_COLUMNS)
    name = Path(path).name
    confidences = table.numbers(["confidence"], np.float64)[:, 0]
    position = {n: i for i, n in enumerate(names)}
    values = np.zeros((len(names), len(names)))
    seen: set[tuple[str, str]] = set()
    for row, (parent, child) in enumerate(zip(table.text("parent"), table.text("child"), strict=True)):
        for node in (parent, child):
            if node not in position:
                raise ConfigError(
                    field, f"{name}, row {row + 1}: {node!r} is not a concept this site labels ({', '.join(names)})"
                )
        if (parent, child) in seen or parent == child:
            raise ConfigError(field, f"{name}, row {row + 1}: the edge {parent} -> {child} repeats or is a self-loop")
        seen.add((parent, child))
        values[position[parent], position[child]] = confidences[row]
    try:
        return ConfidenceMatrix(names, values)
    except FedmosaicError as error:
        raise ConfigError(field, f"{name}: {error}") from None
