r"""A Flower SuperNode whose fixed waits are capped: ``python -m fedmosaic.deploy.supernode``.

A Flower 1.42 SuperNode waits on fixed intervals that no option sets: it
sleeps 3 s after a poll of the SuperLink that found no message, and checks
every 0.5 s whether a message's reply is ready (``time.sleep(3)`` and
``time.sleep(0.5)`` in ``flwr.supernode.start_client_internal``). This
launcher runs Flower's own ``flower-supernode`` entry point in this process
after replacing, in that one module only, its ``time`` binding with
:class:`CappedTime`, whose ``sleep`` waits at most ``--poll-interval``
seconds, or 1 s once the node has had no message for 10 s (an idle node
need not ask its SuperLink five times a second); every other function of
``time`` is the real one. Everything else is Flower's: the arguments, the
transport, the authentication, the TLS.

To know when the node has a message, Flower's ``_pull_and_store_message``
is wrapped: when it returns a run (a message and its task are stored), the
node is marked busy and, with ``--wake-name NAME``, one signal goes to the
node's warm worker (:mod:`fedmosaic.deploy.worker`,
:mod:`fedmosaic.deploy.wake`), which then needs no polling of its own.

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
IDLE_AFTER_S = 10.0
"""Seconds without a message after which a node counts as idle (in a run, a node's messages come seconds apart)."""
IDLE_POLL_INTERVAL_S = 1.0
"""Cap on the waits of an idle node, in seconds (as often as Flower's SuperExec asks for tasks)."""
OPTION = "--poll-interval"
WAKE_OPTION = "--wake-name"
PULL_FUNCTION = "_pull_and_store_message"
"""The function of :data:`PATCHED_MODULE` that stores a message and its task, returning its run (``None``: none)."""


class CappedTime:
    """The ``time`` module, except that ``sleep`` waits at most ``cap`` seconds, or ``idle_cap`` on an idle node.

    A node counts as idle once ``idle_after`` seconds have passed since it
    last stored a message (:meth:`message_stored`; since its start before
    the first): in a run its messages come seconds apart and it polls every
    ``cap``, while a node no run needs polls its SuperLink less often.

    Parameters
    ----------
    cap : float
        Longest wait of one ``sleep`` call while busy, in seconds.
    idle_after : float, default IDLE_AFTER_S
        Seconds without a message after which the node is idle.
    idle_cap : float, default IDLE_POLL_INTERVAL_S
        Longest wait while idle (never shorter than ``cap``).
    sleep : callable float -> None, default time.sleep
        What waits.
    clock : callable () -> float, default time.monotonic
        What tells the time.

    Examples
    --------
    >>> waits, now = [], [0.0]
    >>> capped = CappedTime(0.2, sleep=waits.append, clock=lambda: now[0])
    >>> capped.sleep(3); capped.sleep(0.1); waits
    [0.2, 0.1]
    >>> now[0] = 60.0; capped.sleep(3); capped.message_stored(); capped.sleep(3); waits[2:]
    [1.0, 0.2]
    >>> capped.monotonic is time.monotonic
    True
    """

    def __init__(
        self,
        cap: float,
        *,
        idle_after: float = IDLE_AFTER_S,
        idle_cap: float = IDLE_POLL_INTERVAL_S,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.cap = cap
        self.idle_cap = max(cap, idle_cap)
        self._idle_after = idle_after
        self._sleep = sleep
        self._clock = clock
        self._last_message = clock()

    def message_stored(self) -> None:
        """Note that the node has just stored a message (it is busy again)."""
        self._last_message = self._clock()

    def sleep(self, seconds: float) -> None:
        """Wait ``seconds``, at most :attr:`cap` (:attr:`idle_cap` when idle)."""
        idle = self._clock() - self._last_message >= self._idle_after
        self._sleep(min(seconds, self.idle_cap if idle else self.cap))

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
    has_pull = f"\ndef {PULL_FUNCTION}(" in source
    if found != FLOWER_WAITS or not has_pull:
        missing = "" if has_pull else f" and no {PULL_FUNCTION}"
        raise FedmosaicError(
            f"{PATCHED_MODULE} no longer has the waits fedmosaic's SuperNode launcher caps "
            f"(expected time.sleep seconds {FLOWER_WAITS} and a function {PULL_FUNCTION}, found {found}{missing}); "
            "start flower-supernode itself"
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


def watch_stored_messages(
    capped: CappedTime, wake_name: str | None, *, wake: Callable[[str], None] = send_wake
) -> None:
    """Each time the SuperNode has stored a message and its task: mark it busy, and signal its worker if ``wake_name``.

    Call after :func:`cap_flower_waits` (which checks the installed Flower).
    """
    from flwr.supernode import start_client_internal

    module: ModuleType = start_client_internal
    pull_and_store = getattr(module, PULL_FUNCTION)

    def pull_store_and_tell(*args: Any, **kwargs: Any) -> int | None:
        run_id: int | None = pull_and_store(*args, **kwargs)
        if run_id is not None:
            capped.message_stored()
            if wake_name is not None:
                wake(wake_name)
        return run_id

    vars(module)[PULL_FUNCTION] = pull_store_and_tell


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
        watch_stored_messages(cap_flower_waits(cap), wake_name)
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
