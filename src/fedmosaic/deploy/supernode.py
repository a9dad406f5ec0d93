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

With ``--wake-name NAME`` it also tells the node's warm worker
(:mod:`fedmosaic.deploy.worker`) each time the node has stored a message
for it (:mod:`fedmosaic.deploy.wake`): Flower's
``_pull_and_store_message`` is wrapped so that, when it returns a run (a
message and its task are stored), one signal goes to the worker, which then
needs no polling of its own.

It patches an internal of Flower, so it is guarded: it starts only on the
Flower series fedmosaic pins and only if the module's sleeps are exactly
the ones it caps (read from the module's source); otherwise it stops with
a one-line error and never runs un-patched. ``--poll-interval 3`` gives
Flower's own waits.

Usage::

    python -m fedmosaic.deploy.supernode --poll-interval 0.2 --wake-name NAME --superlink HOST:PORT ...
    (fedmosaic's options first, then flower-supernode's arguments)
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

from fedmosaic.deploy.wake import send_wake
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
WAKE_OPTION = "--wake-name"
PULL_FUNCTION = "_pull_and_store_message"
"""The function of :data:`PATCHED_MODULE` that stores a message and its task, returning its run (``None``: none)."""


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
    functions = {node.name for node in ast.parse(source).body if isinstance(node, ast.FunctionDef)}
    if found != FLOWER_WAITS or PULL_FUNCTION not in functions:
        raise FedmosaicError(
            f"{PATCHED_MODULE} no longer has the waits fedmosaic's SuperNode launcher caps "
            f"(expected time.sleep seconds {FLOWER_WAITS} and a function {PULL_FUNCTION}, found {found}"
            f"{'' if PULL_FUNCTION in functions else f' and no {PULL_FUNCTION}'}); start flower-supernode itself"
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


def wake_worker_on_messages(name: str, *, wake: Callable[[str], None] = send_wake) -> None:
    """Signal the worker listening on ``name`` each time the SuperNode has stored a message and its task.

    Call after :func:`cap_flower_waits` (which checks the installed Flower).
    """
    from flwr.supernode import start_client_internal

    module: ModuleType = start_client_internal
    pull_and_store = getattr(module, PULL_FUNCTION)

    def pull_store_and_wake(*args: Any, **kwargs: Any) -> int | None:
        run_id: int | None = pull_and_store(*args, **kwargs)
        if run_id is not None:
            wake(name)
        return run_id

    vars(module)[PULL_FUNCTION] = pull_store_and_wake


def split_arguments(argv: list[str]) -> tuple[float, str | None, list[str]]:
    """Split ``[--poll-interval S] [--wake-name NAME] <flower-supernode arguments>``.

    Returns
    -------
    tuple
        The validated cap (:data:`POLL_INTERVAL_S` if not given), the wake
        name (``None`` if not given) and Flower's arguments.

    Raises
    ------
    ConfigError
        If an option has no value or the cap is out of range (:func:`poll_interval`).
    """
    values: dict[str, str] = {}
    rest = list(argv)
    while rest and (option := rest[0].split("=", 1)[0]) in (OPTION, WAKE_OPTION):
        if "=" in rest[0]:
            values[option], rest = rest[0].split("=", 1)[1], rest[1:]
        elif len(rest) < 2:
            raise ConfigError(option, "needs a value")
        else:
            values[option], rest = rest[1], rest[2:]
    if values.get(WAKE_OPTION) == "":
        raise ConfigError(WAKE_OPTION, "must be a non-empty name")
    cap = poll_interval(values[OPTION]) if OPTION in values else POLL_INTERVAL_S
    return cap, values.get(WAKE_OPTION), rest


def main(argv: list[str] | None = None, *, run: Callable[[], None] | None = None) -> None:
    """Command line: ``python -m fedmosaic.deploy.supernode [--poll-interval S] [--wake-name NAME] <flower-supernode arguments>``.

    ``run`` is Flower's ``flower-supernode`` entry point (default), called
    with ``sys.argv`` set to Flower's arguments. A bad cap or an unexpected
    Flower is one line on stderr and exit code 2.
    """
    try:
        cap, wake_name, flower_arguments = split_arguments(sys.argv[1:] if argv is None else argv)
        cap_flower_waits(cap)
        if wake_name is not None:
            wake_worker_on_messages(wake_name)
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
