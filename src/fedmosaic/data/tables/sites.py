"""One site's table, read and checked against the shared schema, and sites read on demand.

A site's reader opens only that site's file (and its graph belief); the
:class:`Sites` sequence reads a site the first time it is asked for, so a
Flower node, given only its own file, never opens another.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar, overload

import numpy as np

from fedmosaic.data.arrays import ArrayDataset
from fedmosaic.data.confidence import ConfidenceMatrix
from fedmosaic.data.tables.beliefs import read_belief
from fedmosaic.data.tables.npz import NpzConcepts, read_npz_concepts, read_npz_site
from fedmosaic.data.tables.read import UNLABELED, Table, read_table
from fedmosaic.data.tables.schema import TablesSection
from fedmosaic.errors import ConfigError, FedmosaicError

T = TypeVar("T")


class Sites(Sequence[T], Generic[T]):
    """The sites' data, each read on first use.

    Parameters
    ----------
    count : int
        Number of sites.
    read : callable int -> T
        Reads site ``k``.
    available : frozenset of int or None, default None
        The sites whose files are here (a Flower node: its own); None: all.

    Examples
    --------
    >>> sites = Sites(3, lambda k: k * 10, available=frozenset({1}))
    >>> len(sites), sites[1]
    (3, 10)
    """

    def __init__(self, count: int, read: Callable[[int], T], available: frozenset[int] | None = None) -> None:
        self._count = count
        self._read = read
        self._available = available
        self._cache: dict[int, T] = {}

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> T: ...
    @overload
    def __getitem__(self, index: slice) -> list[T]: ...
    def __getitem__(self, index: int | slice) -> T | list[T]:
        if isinstance(index, slice):
            return [self[k] for k in range(*index.indices(self._count))]
        if not 0 <= index < self._count:
            raise IndexError(index)
        if self._available is not None and index not in self._available:
            raise FedmosaicError(f"site {index}'s table is not on this node (it holds site {sorted(self._available)})")
        if index not in self._cache:
            self._cache[index] = self._read(index)
        return self._cache[index]

    def __iter__(self) -> Iterator[T]:
        return (self[k] for k in range(self._count))

    def map(self, transform: Callable[[int, T], object]) -> Sites[object]:
        """The sites with ``transform(k, site)`` applied on first use."""
        return Sites(self._count, lambda k: transform(k, self[k]), self._available)


@dataclass(frozen=True, eq=False)
class ConceptSite:
    """A concept site's raw table.

    Parameters
    ----------
    x : numpy.ndarray
        float32 ``(n, d)`` features, unscaled.
    values : numpy.ndarray
        int64 ``(n, len(names))`` codes, ``-1`` where a row is unlabeled.
    names : tuple of str
        The concepts the site labels (the task may be one), in schema order.
    belief : ConfidenceMatrix or None
        The site's graph belief, when it has a file.
    """

    x: np.ndarray
    values: np.ndarray
    names: tuple[str, ...]
    belief: ConfidenceMatrix | None


def _site_field(tables: TablesSection, index: int) -> str:
    return f"tables.sites.{index}.file"


def check_columns(table: Table, allowed: list[str]) -> None:
    """Reject a table with a column the shared schema does not declare (its schema disagrees)."""
    extra = [c for c in table.cells.columns if c not in allowed]
    if extra:
        raise ConfigError(
            table.field,
            f"{Path(table.path).name} has column {extra[0]!r}, which the shared schema does not declare: "
            "the sites' schemas disagree (declare it in [tables] or drop it from the table)",
        )


def read_concept_site(
    tables: TablesSection, index: int, file: str | None = None, graph: str | None = None
) -> ConceptSite:
    """Read site ``index``'s concept table (and its belief), checked against the schema.

    Parameters
    ----------
    tables : TablesSection
        The shared schema.
    index : int
        The site.
    file, graph : str or None
        The node's own files (a Flower node config); default: the experiment's.

    Raises
    ------
    ConfigError
        A missing feature column, a cell of the wrong type, a category not in
        the schema, a declared concept never labeled, an invalid belief, or a
        column the schema does not declare.
    """
    site = tables.sites[index]
    table, x = _concept_source(tables, file or site.file, _site_field(tables, index))
    names, columns = [], []
    for name, categories in tables.concepts.items():
        declared = site.concepts is not None and name in site.concepts
        if site.concepts is not None and not declared:
            continue
        if declared:
            table.require([name])
        elif not table.has(name):
            continue
        codes = table.categories(name, categories, f"tables.concepts.{name}")
        if (codes == UNLABELED).all():
            if declared:
                raise ConfigError(
                    f"tables.sites.{index}.concepts",
                    f"declares {name!r}, but {Path(table.path).name} labels it in no row",
                )
            continue
        names.append(name)
        columns.append(codes)
    if not names:
        raise ConfigError(_site_field(tables, index), f"{Path(table.path).name} labels no concept of tables.concepts")
    values = np.stack(columns, axis=1)
    belief_file = graph or site.graph
    belief = None if belief_file is None else read_belief(belief_file, tuple(names), f"tables.sites.{index}.graph")
    return ConceptSite(x=x, values=values, names=tuple(names), belief=belief)


def read_concept_test(tables: TablesSection) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """The coordinator's test table: raw features, and codes of every concept (all labeled)."""
    table, x = _concept_source(tables, str(tables.test), "tables.test")
    names = tuple(tables.concepts)
    values = np.stack([table.categories(n, tables.concepts[n], f"tables.concepts.{n}") for n in names], axis=1)
    _all_labeled(values, names, table)
    return x, values, names


def read_labeled(tables: TablesSection, file: str, field: str, *, complete: bool = False) -> ArrayDataset:
    """A horizontal table as features and labels (unlabeled rows dropped; ``complete``: none allowed).

    An ``.npz`` site gives its ``x`` and ``y`` arrays, every row labeled (:mod:`~fedmosaic.data.tables.npz`).
    """
    if tables.arrays:
        return read_npz_site(file, field, tables.classes)
    table = read_table(file, field)
    check_columns(table, tables.columns())
    x = table.numbers(tables.features)
    assert tables.label is not None
    y = table.categories(tables.label, tables.classes, "tables.classes")
    if complete:
        _all_labeled(y[:, None], (tables.label,), table)
    keep = y != UNLABELED
    if not keep.any():
        raise ConfigError(field, f"{Path(file).name} has no labeled row (column {tables.label!r})")
    return ArrayDataset(x=x[keep], y=y[keep], num_classes=len(tables.classes))


def _concept_source(tables: TablesSection, file: str, field: str) -> tuple[Table | NpzConcepts, np.ndarray]:
    """A concept file to read the concepts from, and its raw features: a table's feature columns, an ``.npz``'s ``x``."""
    if tables.arrays:
        arrays = read_npz_concepts(file, field, list(tables.concepts))
        return arrays, arrays.x
    table = read_table(file, field)
    check_columns(table, tables.columns())
    return table, table.numbers(tables.features)


def _all_labeled(values: np.ndarray, names: tuple[str, ...], table: Table | NpzConcepts) -> None:
    rows, columns = np.nonzero(values == UNLABELED)
    if len(rows):
        raise ConfigError(
            table.field,
            f"{Path(table.path).name}, column {names[columns[0]]!r}, row {rows[0] + 1}: the test table needs every value",
        )
