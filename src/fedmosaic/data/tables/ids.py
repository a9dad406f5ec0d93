"""A vertical party's row IDs: non-empty and unique, whatever file holds them."""

from __future__ import annotations

from collections.abc import Sequence

from fedmosaic.errors import ConfigError


def check_unique_ids(ids: Sequence[str], where: str, field: str) -> None:
    """Refuse an empty or repeated ID.

    Parameters
    ----------
    ids : sequence of str
        The party's IDs, in its row order.
    where : str
        The file and column or array holding them, as the message names it.
    field : str
        The configuration field of the file.

    Raises
    ------
    ConfigError
        Naming ``field``, ``where`` and the first row at fault.

    Examples
    --------
    >>> check_unique_ids(["a", "b", "a"], "view.npz, array 'ids'", "tables.parties.1.file")
    Traceback (most recent call last):
    ...
    fedmosaic.errors.ConfigError: tables.parties.1.file: view.npz, array 'ids': ID in rows 1 and 3 repeats (IDs must be unique)
    """
    seen: dict[str, int] = {}
    for row, value in enumerate(ids):
        if value == "":
            raise ConfigError(field, f"{where}, row {row + 1}: empty ID")
        if value in seen:
            raise ConfigError(
                field, f"{where}: ID in rows {seen[value] + 1} and {row + 1} repeats (IDs must be unique)"
            )
        seen[value] = row
