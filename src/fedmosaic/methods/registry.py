"""The methods fedmosaic can run, by name: its own and installed plugins', through one registry.

fedmosaic's own are in :mod:`fedmosaic.methods.builtin`, registered through
the ``fedmosaic.methods`` entry point of its ``pyproject.toml``; a plugin
package registers its own :class:`~fedmosaic.methods.base.Method` objects
under the same group (``docs/plugins.md``).
"""

from __future__ import annotations

from fedmosaic.methods.base import Method
from fedmosaic.registry import Registry

__all__ = ["METHODS", "get_method"]

METHODS: Registry[Method] = Registry("method", "fedmosaic.methods", Method, builtin="fedmosaic.methods.builtin:METHODS")
"""Every registered method, by name: fedmosaic's first, then each plugin's."""


def get_method(name: str, *, field: str = "method") -> Method:
    """The method registered as ``name``.

    Raises
    ------
    ConfigError
        Naming ``field`` and the accepted names (with a did-you-mean).

    Examples
    --------
    >>> get_method("fedavg").summary
    'FedAvg: example-weighted average of full models'
    >>> get_method("fedav", field="runs.0.method")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    fedmosaic.errors.ConfigError: runs.0.method: unknown method 'fedav'; did you mean 'fedavg'? (accepted: ...)
    """
    return METHODS.get(name, field=field)
