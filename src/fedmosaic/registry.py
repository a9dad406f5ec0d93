"""Registries of named components that fedmosaic's own and installed plugins fill the same way.

A :class:`Registry` holds the components of one kind (methods, models,
datasets) by name. It is filled from Python entry points of one group
(``fedmosaic.methods``, ``fedmosaic.models``, ``fedmosaic.datasets``):
fedmosaic declares its own built-ins there in its ``pyproject.toml``, as a
plugin package declares its components in its own. An entry point loads to
one component or to a sequence of them.

fedmosaic's own entry points load first, so a plugin cannot replace a
built-in; then the others, by distribution name. Where fedmosaic's own
distribution metadata is not on the path (its source run from a checkout,
or an app process that sees only its own files), its built-ins' entry point
is read from the registry's ``builtin`` instead, through the same loading. A plugin that fails to
import, gives something that is not a component, or registers a name that is
taken, is recorded as one line (:attr:`Registry.problems`, printed once on
stderr when the registry is first read) and never stops the built-ins.

Components can also be added from Python with :meth:`Registry.register`
(a notebook, a test); the name rules are the same.
"""

from __future__ import annotations

import difflib
import functools
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from typing import Generic, Protocol, TypeVar

from fedmosaic.errors import ConfigError

OWN_DISTRIBUTION = "fedmosaic"
"""The distribution whose entry points are the built-ins (they load first)."""


class Named(Protocol):
    """A component: anything with a ``name`` and a one-line ``summary``."""

    @property
    def name(self) -> str:
        """The name it is registered and configured by."""
        ...

    @property
    def summary(self) -> str:
        """One line for listings."""
        ...


T = TypeVar("T", bound=Named)


@dataclass(frozen=True)
class Registered(Generic[T]):
    """A component and the package it comes from.

    Parameters
    ----------
    component : Named
        The registered component.
    package : str
        Distribution that registered it (``"fedmosaic"`` for the built-ins,
        ``"__main__"`` for :meth:`Registry.register` without a package).
    """

    component: T
    package: str


class Registry(Generic[T]):
    """The components of one kind, by name, from entry points and :meth:`register`.

    Parameters
    ----------
    kind : str
        What a component is, for messages (``"method"``).
    group : str
        The entry-point group read (``"fedmosaic.methods"``).
    component_type : type
        The class every component is an instance of.
    builtin : str or None, default None
        fedmosaic's own entry point for this group (``"module:attribute"``),
        loaded when the installed metadata does not list it.
    discover : callable () -> sequence of EntryPoint, optional
        Where entry points come from (default: the installed distributions'
        ``group``); tests give their own.

    Examples
    --------
    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class Colour:
    ...     name: str
    ...     summary: str
    >>> colours = Registry("colour", "example.colours", Colour, discover=lambda: ())
    >>> colours.register(Colour("red", "the colour of blood"), package="paints")
    >>> colours.get("red").summary, colours.package("red")
    ('the colour of blood', 'paints')
    >>> colours.get("rde", field="paint.colour")
    Traceback (most recent call last):
    ...
    fedmosaic.errors.ConfigError: paint.colour: unknown colour 'rde'; did you mean 'red'? (accepted: red)
    """

    def __init__(
        self,
        kind: str,
        group: str,
        component_type: type[T],
        *,
        builtin: str | None = None,
        discover: Callable[[], Sequence[EntryPoint]] | None = None,
    ) -> None:
        self.kind = kind
        self.group = group
        self._type = component_type
        self._builtin = builtin
        self._discover = discover if discover is not None else lambda: _installed_entry_points().get(group, ())
        self._entries: dict[str, Registered[T]] = {}
        self._problems: list[str] = []
        self._loaded = False

    # --- reading

    def get(self, name: str, *, field: str | None = None) -> T:
        """The component registered as ``name``.

        Raises
        ------
        ConfigError
            Naming ``field`` (default: the kind), the accepted names and a did-you-mean.
        """
        entries = self._all()
        if name in entries:
            return entries[name].component
        close = difflib.get_close_matches(name, entries, n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        accepted = ", ".join(sorted(entries)) or "none registered"
        raise ConfigError(field or self.kind, f"unknown {self.kind} '{name}'{hint} (accepted: {accepted})")

    def package(self, name: str) -> str:
        """The distribution that registered ``name``."""
        return self._all()[name].package

    def names(self) -> tuple[str, ...]:
        """Every registered name, in registration order (built-ins first)."""
        return tuple(self._all())

    def values(self) -> Iterator[T]:
        """Every registered component, in registration order."""
        return (entry.component for entry in self._all().values())

    def items(self) -> Iterator[tuple[str, T]]:
        """``(name, component)`` pairs, in registration order."""
        return ((name, entry.component) for name, entry in self._all().items())

    def __contains__(self, name: object) -> bool:
        return name in self._all()

    def __getitem__(self, name: str) -> T:
        return self._all()[name].component

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())

    @property
    def problems(self) -> tuple[str, ...]:
        """One line for each plugin that could not be registered."""
        self._all()
        return tuple(self._problems)

    # --- writing

    def register(self, component: T, *, package: str = "__main__") -> None:
        """Add ``component`` under its name.

        Raises
        ------
        ConfigError
            If it is not a component of this registry's type, or its name is taken.
        """
        self._all()
        self._add(component, package)

    def unregister(self, name: str) -> None:
        """Remove the component registered as ``name`` (a notebook replacing its own, a test cleaning up)."""
        self._all().pop(name, None)

    # --- loading

    def _all(self) -> dict[str, Registered[T]]:
        if not self._loaded:
            self._loaded = True
            points = list(self._discover())
            if self._builtin is not None and all(point.value != self._builtin for point in points):
                points.append(EntryPoint("builtin", self._builtin, self.group))
            for point in sorted(points, key=self._load_order):
                self._load(point)
            for line in self._problems:
                print(f"warning: {line}", file=sys.stderr)
        return self._entries

    def _load_order(self, point: EntryPoint) -> tuple[bool, str, str]:
        """The load order: fedmosaic's own entry points first, then by distribution and entry-point name."""
        package = _package(point, self._builtin) or ""
        return (package != OWN_DISTRIBUTION, package, point.name)

    def _load(self, point: EntryPoint) -> None:
        package = _package(point, self._builtin) or "unknown package"
        where = f"plugin '{point.name}' of {package} ({self.group})"
        try:
            loaded = point.load()
        except Exception as error:  # noqa: BLE001 - a plugin's own bug must never stop the built-ins
            self._problems.append(f"{where} failed to import: {type(error).__name__}: {error}")
            return
        components = loaded if isinstance(loaded, list | tuple) else (loaded,)
        for component in components:
            try:
                self._add(component, package)
            except ConfigError as error:
                self._problems.append(f"{where}: {error.message}")

    def _add(self, component: object, package: str) -> None:
        if not isinstance(component, self._type):
            raise ConfigError(self.kind, f"gives a {type(component).__name__}, not a {self._type.__name__}")
        name = component.name
        if not isinstance(name, str) or not name:
            raise ConfigError(self.kind, f"a {self.kind} needs a non-empty name, got {name!r}")
        if name in self._entries:
            owner = self._entries[name].package
            raise ConfigError(self.kind, f"the {self.kind} name '{name}' is taken (by {owner}); not registered")
        self._entries[name] = Registered(component, package)


@functools.cache
def _installed_entry_points() -> dict[str, tuple[EntryPoint, ...]]:
    """Every installed distribution's entry points by group, read once per process for all the registries."""
    everything = entry_points()
    return {group: tuple(everything.select(group=group)) for group in everything.groups}


def _package(point: EntryPoint, builtin: str | None) -> str | None:
    """The distribution that declares ``point`` (fedmosaic for its own built-ins' entry point)."""
    if point.dist is not None:
        return str(point.dist.name)
    return OWN_DISTRIBUTION if builtin is not None and point.value == builtin else None
