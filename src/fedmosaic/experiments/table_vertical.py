"""Vertical tasks from the parties' own tables: rows aligned by private set intersection.

The active party's rows are the task's rows. Its ID column is matched with
each passive party's by :mod:`fedmosaic.methods.tables.alignment` (messages
over a grid, as any federation), so the active party learns which of its
rows each passive party holds and the passive party learns which of its rows
to serve and where; no ID crosses. Each party standardises its own columns
with its own statistics (a passive party: over the rows it serves). A seeded share of the active party's labeled rows is
held out as the test split, whose missing blocks are the alignment's.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from fedmosaic.data.tables.read import UNLABELED, Table, read_table
from fedmosaic.data.tables.schema import TablesSection
from fedmosaic.data.tables.sites import check_columns
from fedmosaic.data.vertical_data import VerticalData, VerticalSplit
from fedmosaic.errors import ConfigError, FedmosaicError
from fedmosaic.experiments.config import ExperimentConfig
from fedmosaic.experiments.vertical_workload import VerticalWorkload
from fedmosaic.federation import Federation, InProcessGrid, Schedule, derive_rng
from fedmosaic.federation.round import MessageObserver
from fedmosaic.methods.tables.alignment import AlignmentClient, AlignmentServer

ALIGNMENT = "alignment"
"""Name of the row alignment's audit log (``messages/alignment.jsonl``)."""
TEST_SETTING = "aligned"
"""Name of the test split (metric ``accuracy_aligned``): the test rows with the blocks alignment found."""


def read_party(tables: TablesSection, index: int) -> tuple[list[str], np.ndarray, Table]:
    """Party ``index``'s IDs, its features (float32) and its table.

    Raises
    ------
    ConfigError
        A missing column, a cell of the wrong type, an empty or repeated ID,
        or a column the schema does not give this party.
    """
    party = tables.parties[index]
    table = read_table(party.file, f"tables.parties.{index}.file")
    assert tables.id is not None
    assert tables.label is not None
    own = [tables.id, *party.features, *([tables.label] if index == 0 else [])]
    check_columns(table, own)
    table.require(own)
    ids = table.text(tables.id)
    seen: dict[str, int] = {}
    for row, value in enumerate(ids):
        if value == "":
            raise ConfigError(table.field, f"{Path(table.path).name}, column {tables.id!r}, row {row + 1}: empty ID")
        if value in seen:
            raise ConfigError(
                table.field,
                f"{Path(table.path).name}, column {tables.id!r}: ID in rows {seen[value] + 1} and {row + 1} repeats (IDs must be unique)",
            )
        seen[value] = row
    return ids, table.numbers(party.features), table


def align(
    active_ids: list[str], passive_ids: list[list[str]], seed: int, observer: MessageObserver | None = None
) -> tuple[np.ndarray, list[tuple[np.ndarray, np.ndarray]]]:
    """Run the private set intersection of the active party with every passive party.

    Returns
    -------
    present : numpy.ndarray
        bool ``(n, K)``: which party holds each of the active party's rows
        (what the active party learns).
    served : list of (rows, positions)
        For each passive party, what it learns: its own rows in the
        intersection and their positions in the active party's row order.
    """
    server = AlignmentServer(active_ids)
    parties = len(passive_ids)
    schedule = Schedule(num_clients=parties, min_replies=parties)
    with InProcessGrid(lambda c: AlignmentClient(passive_ids[c]), seed) as grid:
        Federation(server, grid, schedule, seed=seed, rounds=1, observer=observer).run()
        states = grid.client_states()
    if len(server.present) < parties or len(states) < parties:
        raise FedmosaicError("row alignment needs every passive party; some did not reply")
    present = np.ones((len(active_ids), parties + 1), dtype=bool)
    for c in range(parties):
        present[:, c + 1] = server.present[c]
    served = [(states[c].arrays["rows"], states[c].arrays["positions"]) for c in range(parties)]
    return present, served


def prepare_vertical_tables(config: ExperimentConfig, observer: MessageObserver | None = None) -> VerticalWorkload:
    """Read every party's table, align the rows privately, split and scale.

    Parameters
    ----------
    config : ExperimentConfig
        With a vertical ``[tables]`` section.
    observer : callable or None, default None
        Sees every message of the alignment (the message audit).

    Raises
    ------
    ConfigError
        A bad table, or a passive party with no ID in common with the active party.
    """
    tables = config.tables
    assert tables is not None
    assert tables.label is not None
    parties = [read_party(tables, k) for k in range(len(tables.parties))]
    active_ids, active_x, active_table = parties[0]
    y = active_table.categories(tables.label, tables.classes, "tables.classes")
    present, served = align(active_ids, [ids for ids, _, _ in parties[1:]], config.seed, observer)
    for k in range(1, len(parties)):
        if not present[:, k].any():
            raise ConfigError(
                f"tables.parties.{k}.file",
                f"{Path(tables.parties[k].file).name} has no ID in common with the active party (the intersection is empty)",
            )
    blocks = [_standardised(active_x)]
    for (rows, positions), (_, x, _) in zip(served, parties[1:], strict=True):
        block = np.full((len(active_ids), x.shape[1]), np.nan, dtype=np.float32)
        block[positions] = _standardised(x[rows])
        blocks.append(block)
    labeled = np.flatnonzero(y != UNLABELED)
    if len(labeled) < 2:
        raise ConfigError(
            "tables.parties.0.file",
            f"the active party labels {len(labeled)} rows (column {tables.label!r}); at least 2 are needed",
        )
    rng = derive_rng(config.seed, "tables-vertical")
    test = np.sort(rng.choice(labeled, size=max(1, round(tables.test_fraction * len(labeled))), replace=False))
    train = np.setdiff1d(np.arange(len(active_ids)), test)
    train_y = y[train].copy()
    if tables.label_budget is not None:
        held = np.flatnonzero(train_y != UNLABELED)
        drop = rng.permutation(held)[tables.label_budget :]
        train_y[drop] = UNLABELED

    def split(rows: np.ndarray, labels: np.ndarray) -> VerticalSplit:
        return VerticalSplit([b[rows] for b in blocks], present[rows], labels)

    data = VerticalData(split(train, train_y), {TEST_SETTING: split(test, y[test])}, len(tables.classes), "gaussian")
    return VerticalWorkload(data)


def _standardised(x: np.ndarray) -> np.ndarray:
    """A party's own columns standardised over the rows given (its statistics stay with it)."""
    mean, spread = x.mean(axis=0), x.std(axis=0)
    spread[spread == 0] = 1.0
    standardised: np.ndarray = ((x - mean) / spread).astype(np.float32)
    return standardised
