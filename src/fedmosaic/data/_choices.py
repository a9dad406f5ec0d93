"""One-line errors for a value that is not among the accepted names."""

import difflib
from collections.abc import Iterable

from fedmosaic.errors import ConfigError


def unknown_choice(field: str, what: str, value: str, choices: Iterable[str]) -> ConfigError:
    """Build the error for a name that is not one of ``choices``.

    Parameters
    ----------
    field : str
        Dotted configuration field, e.g. ``"data.dataset"``.
    what : str
        What the value names, e.g. ``"dataset"``.
    value : str
        The name the user gave.
    choices : Iterable[str]
        The accepted names.

    Returns
    -------
    ConfigError
        Lists the accepted names in sorted order and, when one is close to
        ``value``, suggests it.

    Examples
    --------
    >>> print(unknown_choice("partition.scheme", "scheme", "iad", ["iid", "dirichlet"]))
    partition.scheme: unknown scheme 'iad'; expected one of: dirichlet, iid (did you mean 'iid'?)
    """
    accepted = sorted(choices)
    message = f"unknown {what} {value!r}; expected one of: {', '.join(accepted)}"
    close = difflib.get_close_matches(value, accepted, n=1)
    if close:
        message += f" (did you mean {close[0]!r}?)"
    return ConfigError(field, message)
