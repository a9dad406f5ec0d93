"""A task's labels must hold at least two classes, or there is nothing to learn.

A classifier trained on rows of one class predicts that class and scores 100%
on any test rows of it: an accuracy that measures nothing. Every workload
checks its training labels with :func:`require_classes` before a run starts.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fedmosaic.errors import ConfigError


def require_classes(labels: np.ndarray, classes: Sequence[str], field: str, rows: str) -> None:
    """Refuse ``labels`` that hold fewer than two of ``classes`` (codes; negative: unlabeled).

    Parameters
    ----------
    labels : numpy.ndarray
        Class codes, an index into ``classes``; a negative code marks an unlabeled row.
    classes : sequence of str
        The classes' names, by code.
    field : str
        The field named in the message (where the rows come from).
    rows : str
        What the rows are, for the message ("the sites' labeled rows of 'dysp'").

    Raises
    ------
    ConfigError
        Naming ``field``, the one class found (or none) and the classes expected.

    Examples
    --------
    >>> require_classes(np.array([0, 1, -1]), ["no", "yes"], "tables.sites", "the sites' rows")
    >>> require_classes(np.array([1, 1, -1]), ["no", "yes"], "tables.sites", "the sites' rows")
    Traceback (most recent call last):
    ...
    fedmosaic.errors.ConfigError: tables.sites: the sites' rows hold one class ('yes') of no, yes: a classifier needs rows of at least two classes to learn anything
    """
    found = np.unique(labels[labels >= 0])
    if len(found) >= 2:
        return
    held = f"one class ({classes[int(found[0])]!r})" if len(found) else "no labeled row"
    raise ConfigError(
        field,
        f"{rows} hold {held} of {', '.join(classes)}: a classifier needs rows of at least two classes to learn anything",
    )
