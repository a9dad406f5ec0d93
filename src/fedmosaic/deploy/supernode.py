r"""A Flower SuperNode whose fixed waits are capped: ``python -m fedmosaic.deploy.supernode``.

A Flower 1.42 SuperNode waits on fixed intervals that no option sets: it
sleeps 3 s after a poll of the SuperLink that found no message, and checks
every 0.5 s whether a message's reply is ready (``time.sleep(3)`` and
``time.sleep(0.5)`` in ``flwr.supernode.start_client_internal``). This
launcher runs Flower's own ``flower-supernode`` entry point in this process
after replacing, in that one module only, its ``time`` binding with
:class:`CappedTime`, whose ``sleep`` waits at most ``--poll-interval``
seconds; every other function of ``time`` is the real one. Everything else
is Flower's: the arguments, the transport, the authentication, the TLS.

It patches an internal of Flower, so it is guarded: it starts only on the
Flower series fedmosaic pins and only if the module's sleeps are exactly
the ones it caps (read from the module's source); otherwise it stops with
a one-line error and never runs un-patched. ``--poll-interval 3`` gives
Flower's own waits.

Usage::

    python -m fedmosaic.deploy.supernode --poll-interval 0.2 --superlink HOST:PORT ... (flower-supernode's arguments)
"""

from __future__ import annotations

import ast
import inspect
import math
import sys
import time
from collections.abc import Callable
from importlib.metadata import version
from types import ModuleType
from typing import Any

from fedmosaic.errors import ConfigError, FedmosaicError

FLOWER_SERIES = "1.42"
"""The Flower release series whose SuperNode internals the cap was written for (the pinned ``flwr``)."""
PATCHED_MODULE = "flwr.supernode.start_client_internal"
FLOWER_WAITS: dict[str, list[float]] = {"start_client_internal": [3], "_push_messages": [0.5, 0.5]}
"""Seconds of every ``time.sleep`` call in :data:`PATCHED_MODULE`, by top-level function, in source order."""
POLL_INTERVAL_S = 0.2
"""Default cap on each of the SuperNode's waits, in seconds."""
MIN_POLL_INTERVAL_S = 0.05
"""Shortest cap accepted: a SuperNode polls its SuperLink at most 20 times a second."""
FLOWER_POLL_INTERVAL_S = 3.0
"""Flower's longest fixed wait; a cap of this or more leaves Flower's waits as they are."""
OPTION = "--poll-interval"


class CappedTime:
    """The ``time`` module, except that ``sleep`` waits at most ``cap`` seconds.

    Parameters
    ----------
    cap : float
        Longest wait of one ``sleep`` call, in seconds.
    sleep : callable float -> None, default time.sleep
        What waits.

    Examples
    --------
    >>> waits = []
    >>> capped = CappedTime(0.2, sleep=waits.append)
    >>> capped.sleep(3); capped.sleep(0.1); waits
    [0.2, 0.1]
    >>> capped.monotonic is time.monotonic
    True
    """

    def __init__(self, cap: float, *, sleep: Callable[[float], None] = time.sleep) -> None:
        self.cap = cap
        self._sleep = sleep

    def sleep(self, seconds: float) -> None:
        """Wait ``seconds``, at most :attr:`cap`."""
        self._sleep(min(seconds, self.cap))

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


def poll_interval(value: str | float) -> float:
    """Validate a cap on the SuperNode's waits: seconds from 0.05 to 3 (Flower's own waits).

    Raises
    ------
    ConfigError
        Naming ``--poll-interval`` and the accepted range.
    """
    try:
        seconds = float(value)
    except ValueError:
        seconds = math.nan
    if not MIN_POLL_INTERVAL_S <= seconds <= FLOWER_POLL_INTERVAL_S:
        raise ConfigError(
            OPTION,
            f"must be seconds from {MIN_POLL_INTERVAL_S:g} to {FLOWER_POLL_INTERVAL_S:g} "
            f"({FLOWER_POLL_INTERVAL_S:g} keeps Flower's own waits), got {value!r}",
        )
    return seconds


def sleeps(source: str) -> dict[str, list[float | None]]:
    """Seconds of every ``time.sleep`` call in a module's ``source``, by top-level function (``None``: not a constant)."""
    found: dict[str, list[float | None]] = {}
    for node in ast.parse(source).body:
        for call in ast.walk(node):
            if (
                isinstance(call, ast.Call)
                and isinstance(call.func, ast.Attribute)
                and call.func.attr == "sleep"
                and isinstance(call.func.value, ast.Name)
                and call.func.value.id == "time"
            ):
                found.setdefault(getattr(node, "name", "<module>"), []).append(_constant_seconds(call))
    return found


def _constant_seconds(call: ast.Call) -> float | None:
    """The first argument of ``call`` if it is a number written in the source, else ``None``."""
    argument = call.args[0] if call.args else None
    if isinstance(argument, ast.Constant) and isinstance(argument.value, int | float):
        return float(argument.value)
    return None


def check_flower(installed: str, source: str) -> None:
    """Refuse a Flower whose SuperNode the cap was not written for.

    Parameters
    ----------
    installed : str
        The installed ``flwr`` version.
    source : str
        The source of :data:`PATCHED_MODULE`.

    Raises
    ------
    FedmosaicError
        If ``installed`` is not of :data:`FLOWER_SERIES`, or the module's
        sleeps are not exactly :data:`FLOWER_WAITS`.
    """
    if installed.split(".")[:2] != FLOWER_SERIES.split("."):
        raise FedmosaicError(
            f"fedmosaic's SuperNode launcher caps the waits of flwr {FLOWER_SERIES}.x, but flwr {installed} is "
            "installed; install the pinned flwr or start flower-supernode itself"
        )
    found = sleeps(source)
    if found != FLOWER_WAITS:
        raise FedmosaicError(
            f"{PATCHED_MODULE} no longer has the waits fedmosaic's SuperNode launcher caps "
            f"(expected time.sleep seconds {FLOWER_WAITS}, found {found}); start flower-supernode itself"
        )


def cap_flower_waits(cap: float, *, sleep: Callable[[float], None] = time.sleep) -> CappedTime:
    """Check the installed Flower (:func:`check_flower`), then cap the SuperNode's waits at ``cap`` seconds.

    Returns
    -------
    CappedTime
        What :data:`PATCHED_MODULE` now calls ``time``.

    Raises
    ------
    FedmosaicError
        If Flower is not the one the cap was written for (nothing is patched).
    """
    from flwr.supernode import start_client_internal

    module: ModuleType = start_client_internal
    check_flower(version("flwr"), inspect.getsource(module))
    capped = CappedTime(cap, sleep=sleep)
    vars(module)["time"] = capped  # the module's global `time`, which its functions look up at each call
    return capped


def split_arguments(argv: list[str]) -> tuple[float, list[str]]:
    """Split ``[--poll-interval S] <flower-supernode arguments>`` into the validated cap and Flower's arguments.

    Raises
    ------
    ConfigError
        If the cap is missing or out of range (:func:`poll_interval`).
    """
    if argv[:1] == [OPTION]:
        if len(argv) < 2:
            raise ConfigError(OPTION, "needs a value in seconds")
        return poll_interval(argv[1]), argv[2:]
    if argv and argv[0].startswith(f"{OPTION}="):
        return poll_interval(argv[0].split("=", 1)[1]), argv[1:]
    return POLL_INTERVAL_S, argv


def main(argv: list[str] | None = None, *, run: Callable[[], None] | None = None) -> None:
    """Command line: ``python -m fedmosaic.deploy.supernode [--poll-interval S] <flower-supernode arguments>``.

    ``run`` is Flower's ``flower-supernode`` entry point (default), called
    with ``sys.argv`` set to Flower's arguments. A bad cap or an unexpected
    Flower is one line on stderr and exit code 2.
    """
    try:
        cap, flower_arguments = split_arguments(sys.argv[1:] if argv is None else argv)
        cap_flower_waits(cap)
    except FedmosaicError as error:
        print(f"error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
    if run is None:
        from flwr.supernode.cli import flower_supernode

        run = flower_supernode
    sys.argv = ["flower-supernode", *flower_arguments]
    run()


if __name__ == "__main__":
    main()
