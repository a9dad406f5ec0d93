"""The ``[tables]`` section: a shared schema for per-site tables.

Sites run fedmosaic on their own tables (CSV or Parquet). The experiment file
declares one schema that every site shares (column names, types and
categories: nothing about any site's rows) and where each site's table is.
In process, the experiment lists one file per site; on a Flower deployment
each SuperNode is given only its own file through its node config
(``data-file``, and ``graph-file`` for a site's graph belief), and
the paths listed here are the coordinator's.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any, Literal

from annotated_types import Ge
from pydantic import BaseModel, ConfigDict, Field

from fedmosaic.errors import ConfigError
from fedmosaic.limits import Samples

NPZ_SUFFIX = ".npz"
"""The suffix of a site's own arrays (:mod:`fedmosaic.data.tables.npz`) rather than a table."""


def is_npz(file: str) -> bool:
    """Whether ``file`` names a ``.npz`` file of arrays (by its suffix) rather than a table."""
    return Path(file).suffix.lower() == NPZ_SUFFIX


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


class SiteTable(_Strict):
    """One site's table (horizontal and concept tasks).

    Parameters
    ----------
    file : str
        The site's CSV or Parquet file.
    concepts : list of str or None, default None
        Concept tasks: the concepts the site labels. None: the schema's
        concepts whose column the table holds with at least one value. A
        concept listed here must be labeled in some row.
    graph : str or None, default None
        Concept tasks: the site's graph belief, a CSV of ``parent,child,confidence``
        rows over the concepts it labels; without one the site learns its
        belief from its own labels (bootstrap structure learning).
    """

    file: str = Field(min_length=1)
    concepts: list[str] | None = None
    graph: str | None = None


class PartyTable(_Strict):
    """One party's table or arrays (vertical tasks); the first party is the active one.

    Parameters
    ----------
    file : str
        The party's CSV or Parquet file: the ID column and its feature columns
        (the active party's also holds the label column); or its NumPy
        ``.npz`` file: ``ids`` (one per row), ``x`` (a row per example, of
        ``shape``) and, for the active party, ``y``.
    features : list of str, default []
        A table's feature columns (numbers).
    shape : list of int or None, default None
        An ``.npz`` party's shape of one example of ``x`` (an image view:
        ``[1, 28, 28]``); its own encoder is built on it.
    """

    file: str = Field(min_length=1)
    features: list[str] = Field(default_factory=list)
    shape: list[Annotated[int, Ge(1)]] | None = Field(default=None, min_length=1, max_length=4)

    @property
    def example_shape(self) -> tuple[int, ...]:
        """One example's shape: ``shape``, or a table row's ``(columns,)``."""
        return tuple(self.shape) if self.shape is not None else (len(self.features),)

    @property
    def width(self) -> int:
        """The party's columns: its features, or an example of ``x`` flattened."""
        return math.prod(self.example_shape)

    def column_names(self, index: int) -> list[str]:
        """The names of its columns as party ``index``: the features, or ``x`` flattened (``party1.x0``, ...)."""
        return list(self.features) if self.shape is None else [f"party{index}.x{j}" for j in range(self.width)]


class TablesSection(_Strict):
    """Per-site tables and the schema they share (``[tables]``).

    Parameters
    ----------
    kind : {"horizontal", "concepts", "vertical"}
        Sites holding rows of the same columns with a label; sites labelling
        some concepts of a concept graph; or parties holding columns of the
        same individuals, matched by an ID column.
    features : list of str, default []
        Horizontal and concept tasks: the feature columns (numbers), scaled
        by federated statistics.
    label : str or None, default None
        Horizontal and vertical tasks: the label column (the active party's).
    classes : list of str, default []
        Horizontal and vertical tasks: the label's classes, as written in
        the tables; an empty cell is an unlabeled row.
    task : str or None, default None
        Concept tasks: the task column (one of ``concepts``).
    concepts : table of str to list of str, default {}
        Concept tasks: every concept's categories (the task's included).
    sites : list of {file, concepts, graph}, default []
        Horizontal and concept tasks: one table per site (site ``i`` is client ``i``).
        Sites may instead be NumPy ``.npz`` files of an array ``x`` (a row
        per example, any shape: images, signals) and, for a horizontal task,
        ``y`` (each row's class, as written in ``classes`` or its index), for
        a concept task one array per concept the site labels (its category as
        written in ``concepts``, ``""`` where unlabeled, or its index, ``-1``);
        then the test file is an ``.npz`` too, and ``features`` and ``label``
        stay unset. ``x`` is standardised element by element with federated
        statistics, as table features are; a concept task reads it flattened.
    test : str or None, default None
        Horizontal and concept tasks: the coordinator's test table, labeled
        for the label or every concept.
    val_fraction : float, default 0.2
        Concept tasks: share of each site's rows it keeps for validation (at
        most half: training keeps the rest).
    id : str or None, default None
        Vertical tasks: the ID column; its values are never sent (rows are
        aligned by private set intersection).
    parties : list of {file, features, shape}, default []
        Vertical tasks: the active party first, then the passive parties.
    test_fraction : float, default 0.25
        Vertical tasks: share of the active party's labeled rows held out
        for testing.
    label_budget : int or None, default None
        Vertical tasks: keep this many of the training labels (default: all).
    """

    kind: Literal["horizontal", "concepts", "vertical"]
    features: list[str] = Field(default_factory=list)
    label: str | None = None
    classes: list[str] = Field(default_factory=list)
    task: str | None = None
    concepts: dict[str, list[str]] = Field(default_factory=dict)
    sites: list[SiteTable] = Field(default_factory=list)
    test: str | None = None
    val_fraction: float = Field(default=0.2, ge=0, le=0.5)
    id: str | None = None
    parties: list[PartyTable] = Field(default_factory=list)
    test_fraction: float = Field(default=0.25, gt=0, lt=1)
    label_budget: Samples | None = None

    @property
    def task_kind(self) -> str:
        """The experiment's task kind: ``classification``, ``concepts`` or ``vertical``."""
        return "classification" if self.kind == "horizontal" else self.kind

    @property
    def arrays(self) -> bool:
        """Whether the sites are ``.npz`` arrays (``x`` and ``y``) rather than tables of columns."""
        return any(is_npz(site.file) for site in self.sites) or (self.test is not None and is_npz(self.test))

    @property
    def num_clients(self) -> int:
        """Clients of the federation: the sites, or the passive parties."""
        return len(self.parties) - 1 if self.kind == "vertical" else len(self.sites)

    def columns(self) -> list[str]:
        """Every column the schema names (features, label, task and concepts, ID)."""
        named = [*self.features, *([self.label] if self.label else []), *self.concepts, *([self.id] if self.id else [])]
        return named + [c for party in self.parties for c in party.features]


def check_tables(tables: TablesSection) -> None:
    """Cross-field rules of the ``[tables]`` section.

    Raises
    ------
    ConfigError
        Naming the first offending field.
    """
    if tables.kind == "vertical":
        _check_vertical(tables)
        return
    if len(tables.sites) < 1:
        raise ConfigError("tables.sites", f"a {tables.kind} task needs at least one site table")
    if tables.test is None:
        raise ConfigError("tables.test", "needs the coordinator's test table")
    if tables.arrays:
        _check_arrays(tables)
        return
    _require(tables.features, "tables.features", "feature columns")
    _unique(tables.features, "tables.features")
    if tables.kind == "horizontal":
        _check_label(tables)
        for field in ("task", "concepts", "id", "parties"):
            _absent(tables, field, "horizontal")
        for index, site in enumerate(tables.sites):
            for field in ("concepts", "graph"):
                if getattr(site, field) is not None:
                    raise ConfigError(f"tables.sites.{index}.{field}", "concept tasks only (tables.kind = 'concepts')")
        return
    _check_concepts(tables)


def _check_concepts(tables: TablesSection) -> None:
    """A concept task's schema: every concept's categories, the task among them, sites' concepts declared."""
    for field in ("label", "classes", "id", "parties"):
        _absent(tables, field, "concepts")
    if not tables.concepts:
        raise ConfigError("tables.concepts", "needs every concept's categories, e.g. smoke = ['no', 'yes']")
    for name, categories in tables.concepts.items():
        _categories(categories, f"tables.concepts.{name}")
    if tables.task not in tables.concepts:
        raise ConfigError(
            "tables.task", f"must be one of tables.concepts ({', '.join(tables.concepts)}), got {tables.task!r}"
        )
    clash = sorted(set(tables.features) & set(tables.concepts))
    if clash:
        raise ConfigError("tables.features", f"{clash[0]!r} is also a concept")
    for index, site in enumerate(tables.sites):
        unknown = [c for c in site.concepts or [] if c not in tables.concepts]
        if unknown:
            raise ConfigError(
                f"tables.sites.{index}.concepts",
                f"{unknown[0]!r} is not in tables.concepts ({', '.join(tables.concepts)})",
            )


def _check_vertical(tables: TablesSection) -> None:
    for field in ("features", "task", "concepts", "sites", "test"):
        _absent(tables, field, "vertical")
    if len(tables.parties) < 2:
        raise ConfigError(
            "tables.parties",
            f"a vertical task needs the active party and at least one passive party, got {len(tables.parties)}",
        )
    if not tables.id:
        raise ConfigError("tables.id", "needs the ID column the parties' rows are matched by")
    if is_npz(tables.parties[0].file):
        if tables.label:
            raise ConfigError("tables.label", "the active party's .npz holds its labels as the array y: leave it unset")
        _categories(tables.classes, "tables.classes")
    else:
        _check_label(tables)
    seen: dict[str, int] = {}
    for index, party in enumerate(tables.parties):
        _check_party_kind(party, f"tables.parties.{index}")
        _unique(party.features, f"tables.parties.{index}.features")
        for column in party.features:
            if column in (tables.id, tables.label):
                raise ConfigError(f"tables.parties.{index}.features", f"{column!r} is the ID or label column")
            if column in seen:
                raise ConfigError(f"tables.parties.{index}.features", f"{column!r} is already party {seen[column]}'s")
            seen[column] = index


def _check_party_kind(party: PartyTable, field: str) -> None:
    """A table party names its feature columns; an ``.npz`` party gives its examples' shape instead."""
    if is_npz(party.file):
        if party.features:
            raise ConfigError(
                f"{field}.features", "an .npz party holds the arrays ids and x, not columns: leave it unset"
            )
        if party.shape is None:
            raise ConfigError(f"{field}.shape", "an .npz party needs the shape of one example of x, e.g. [1, 28, 28]")
    else:
        if party.shape is not None:
            raise ConfigError(f"{field}.shape", "is for an .npz party's arrays; a table's columns are its features")
        _require(party.features, f"{field}.features", "party's feature columns")


def _check_arrays(tables: TablesSection) -> None:
    """``.npz`` sites: every file an ``.npz``, no column names; a horizontal task's classes, or a concept task's concepts."""
    assert tables.test is not None
    files = [("tables.test", tables.test)] + [(f"tables.sites.{k}.file", s.file) for k, s in enumerate(tables.sites)]
    tabular = next(((field, file) for field, file in files if not is_npz(file)), None)
    if tabular is not None:
        raise ConfigError(
            tabular[0], f"with .npz sites every file is an .npz (x and y arrays), got {Path(tabular[1]).name}"
        )
    for field in ("features", "label"):
        if getattr(tables, field):
            raise ConfigError(f"tables.{field}", "an .npz site holds arrays, not columns: leave it unset")
    if tables.kind == "concepts":
        _check_concepts(tables)
        return
    _categories(tables.classes, "tables.classes")
    for field in ("task", "concepts", "id", "parties"):
        _absent(tables, field, "horizontal")


def _check_label(tables: TablesSection) -> None:
    if not tables.label:
        raise ConfigError("tables.label", "needs the label column")
    _categories(tables.classes, "tables.classes")
    if tables.label in tables.features:
        raise ConfigError("tables.label", f"{tables.label!r} is also a feature")


def _categories(values: list[str], field: str) -> None:
    if len(values) < 2:
        raise ConfigError(field, f"needs at least two categories, got {values}")
    _unique(values, field)
    if "" in values:
        raise ConfigError(field, "an empty category is not allowed (an empty cell means unlabeled)")


def _require(values: list[str], field: str, what: str) -> None:
    if not values:
        raise ConfigError(field, f"needs the {what}")


def _unique(values: list[str], field: str) -> None:
    seen: set[str] = set()
    for value in values:
        if value in seen:
            raise ConfigError(field, f"{value!r} repeats")
        seen.add(value)


def _absent(tables: TablesSection, field: str, kind: str) -> None:
    if getattr(tables, field) not in (None, [], {}):
        raise ConfigError(f"tables.{field}", f"is not used by a {kind} task (tables.kind = '{kind}')")


def resolve_paths(source: dict[str, Any], base: Path) -> dict[str, Any]:
    """The raw configuration with the ``[tables]`` files made absolute, relative to ``base``.

    An experiment file's tables are found beside it, wherever it is run from.

    Examples
    --------
    >>> resolve_paths({"tables": {"sites": [{"file": "a.csv"}], "test": "t.csv"}}, Path("/srv/x"))["tables"]
    {'sites': [{'file': '/srv/x/a.csv'}], 'test': '/srv/x/t.csv'}
    """
    tables = source.get("tables")
    if not isinstance(tables, dict):
        return source

    def absolute(value: Any) -> Any:
        return str((base / value).resolve()) if isinstance(value, str) and value else value

    resolved = dict(tables)
    if "test" in resolved:
        resolved["test"] = absolute(resolved["test"])
    for key in ("sites", "parties"):
        if isinstance(resolved.get(key), list):
            resolved[key] = [
                {k: absolute(v) if k in ("file", "graph") else v for k, v in entry.items()}
                if isinstance(entry, dict)
                else entry
                for entry in resolved[key]
            ]
    return {**source, "tables": resolved}
