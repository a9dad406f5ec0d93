"""Vertical tasks from the parties' own tables: rows aligned by private set intersection.

The active party's rows are the task's rows. Its ID column is matched with
each passive party's by :mod:`fedmosaic.preparation.alignment` (messages
over a grid, as any federation), so the active party learns which of its
rows each passive party holds and the passive party learns which of its rows
to serve and where; no ID crosses. Each party standardises its own columns
with its own statistics (a passive party: over the rows it serves). A seeded share of the active party's labeled rows is
held out as the test split, whose missing blocks are the alignment's.

The coordinator is the active party. In process it reads every table; with
a Flower engine it reads only the active party's, the alignment runs as
Flower messages, and each passive party's node builds its own block from its
own table and the alignment its client state keeps (:func:`node_block`,
:func:`node_data`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fedmosaic.data.labels import require_classes
from fedmosaic.data.tables.ids import check_unique_ids
from fedmosaic.data.tables.npz import read_npz_party
from fedmosaic.data.tables.read import UNLABELED, read_table
from fedmosaic.data.tables.schema import TablesSection
from fedmosaic.data.tables.sites import check_columns
from fedmosaic.data.vertical_data import VerticalData, VerticalSplit
from fedmosaic.errors import ConfigError, FedmosaicError
from fedmosaic.experiments.config import ExperimentConfig, FederationSection
from fedmosaic.experiments.inprocess_engine import Engine, InProcessEngine, JobSpec
from fedmosaic.experiments.run_encoders import check_own_models
from fedmosaic.experiments.vertical_workload import VerticalWorkload
from fedmosaic.federation import ClientState, Federation, Grid, RoundRecord, Schedule, derive_rng
from fedmosaic.federation.audit import MessageRecord
from fedmosaic.federation.message import as_int
from fedmosaic.federation.round import MessageObserver
from fedmosaic.preparation.alignment import AlignmentClient, AlignmentServer

ALIGNMENT = "alignment"
"""Label of the row alignment's job, and name of its audit log (``messages/alignment.jsonl``)."""
Scale = tuple[np.ndarray, np.ndarray]
"""A party's standardisation of its columns: their mean and standard deviation."""
TEST_SETTING = "aligned"
"""Name of the test split (metric ``accuracy_aligned``): the test rows with the blocks alignment found."""


def read_party(
    tables: TablesSection, index: int, file: str | None = None
) -> tuple[list[str], np.ndarray, np.ndarray | None]:
    """Party ``index``'s IDs, its features (float32, flattened) and, for the active party, its classes.

    ``file`` is the party's table or ``.npz`` (by default the schema's);
    classes are indices into ``tables.classes``, ``UNLABELED`` where a row
    has none.

    Raises
    ------
    ConfigError
        A missing column or array, a cell of the wrong type, an empty or
        repeated ID, a column the schema does not give this party, or
        arrays of another shape than the party's.
    """
    party = tables.parties[index]
    path, field = file or party.file, f"tables.parties.{index}.file"
    classes = tables.classes if index == 0 else None
    if party.shape is not None:
        arrays = read_npz_party(path, field, party.example_shape, classes)
        return arrays.ids, arrays.x, arrays.y
    table = read_table(path, field)
    assert tables.id is not None
    label = tables.label if index == 0 else None  # a table active party's label column (check_tables)
    own = [tables.id, *party.features, *([label] if label else [])]
    check_columns(table, own)
    table.require(own)
    ids = table.text(tables.id)
    check_unique_ids(ids, f"{Path(table.path).name}, column {tables.id!r}", table.field)
    labels = None if label is None else table.categories(label, tables.classes, "tables.classes")
    return ids, table.numbers(party.features), labels


def prepare_vertical_tables(config: ExperimentConfig, observer: MessageObserver | None = None) -> VerticalWorkload:
    """Read every party's table, align the rows privately in process, split and scale.

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
    return align_tables(read_tables(config, in_process=True), config, None, observer)


@dataclass(frozen=True, eq=False)
class UnalignedTables:
    """A vertical task before its rows are aligned: the active party's table, and in process every party's.

    Parameters
    ----------
    ids, x, y : list of str, numpy.ndarray, numpy.ndarray
        The active party's IDs, raw features and classes (``UNLABELED`` where unlabeled).
    passive : list of (ids, features) or None
        Each passive party's IDs and raw features in process; None with a
        Flower engine, where each party reads its own table on its node.
    audit : MessageRecord or None, default None
        With ``federation.audit``: receives the alignment's messages.
    """

    ids: list[str]
    x: np.ndarray
    y: np.ndarray
    passive: list[tuple[list[str], np.ndarray]] | None
    audit: MessageRecord | None = None


def read_tables(config: ExperimentConfig, *, in_process: bool) -> UnalignedTables:
    """The coordinator's tables: the active party's, and in process the passive parties' too (checked now).

    Raises
    ------
    ConfigError
        A bad table.
    """
    tables = config.tables
    assert tables is not None
    ids, x, y = read_party(tables, 0)
    assert y is not None  # the active party's
    labels = f"column {tables.label!r}" if tables.label else "array y"
    require_classes(y, tables.classes, "tables.parties.0.file", f"the active party's labels ({labels})")
    passive = [read_party(tables, k)[:2] for k in range(1, len(tables.parties))] if in_process else None
    return UnalignedTables(ids, x, y, passive)


def align_tables(
    unaligned: UnalignedTables,
    config: ExperimentConfig,
    engine: Engine | None,
    observer: MessageObserver | None = None,
) -> VerticalWorkload:
    """Align the parties' rows by private set intersection over ``engine``, then split and scale.

    The alignment is a one-round job of its own (label :data:`ALIGNMENT`):
    each passive party keeps the rows it serves in its client state. In
    process the coordinator reads those states and builds every block; with
    a Flower engine a passive party's block is built on its node
    (:func:`node_block`) and the coordinator's is NaN, as it holds none of
    its values.

    Raises
    ------
    ConfigError
        A passive party with no ID in common with the active party, or fewer than two labeled rows.
    FedmosaicError
        If a passive party did not take part.
    """
    tables = config.tables
    assert tables is not None
    parties = tables.num_clients
    server = AlignmentServer(unaligned.ids)
    schedule = Schedule(num_clients=parties, min_replies=parties)
    states: dict[int, ClientState] = {}

    def federate(grid: Grid) -> list[RoundRecord]:
        history = Federation(server, grid, schedule, seed=config.seed, rounds=1, observer=observer).run()
        states.update(grid.client_states())
        return history

    passive = unaligned.passive
    spec = JobSpec(
        document=config.document(),
        run=0,
        label=ALIGNMENT,
        schedule=schedule,
        seed=config.seed,
        client_factory=lambda c: AlignmentClient([] if passive is None else passive[c][0]),
        reply_timeout_s=config.federation.reply_timeout_s,
    )
    (engine or InProcessEngine(FederationSection(workers=1))).run_job(spec, federate)
    if len(server.present) < parties:
        raise FedmosaicError("row alignment needs every passive party; some did not reply")
    n = len(unaligned.ids)
    present = np.ones((n, parties + 1), dtype=bool)
    active = _scale(unaligned.x)
    scales: list[Scale | None] = [active]
    blocks = [_standardised(unaligned.x, active)]
    for c in range(parties):
        present[:, c + 1] = server.present[c]
        if not present[:, c + 1].any():
            raise ConfigError(
                f"tables.parties.{c + 1}.file",
                f"{Path(tables.parties[c + 1].file).name} has no ID in common with the active party (the intersection is empty)",
            )
        block, scale = (
            node_block(passive[c][1], states[c])
            if passive is not None
            else (_unheld(n, tables.parties[c + 1].width), None)
        )
        blocks.append(block)
        scales.append(scale)
    test, labels = _test_rows(unaligned.y, tables, config.seed)
    data = _split(blocks, present, labels, test, tables)
    check_own_models(config, data.party_shapes, data.num_classes)
    return VerticalWorkload(data, audit=unaligned.audit, test_rows=test, scales=tuple(scales))


def node_block(x: np.ndarray, alignment: ClientState) -> tuple[np.ndarray, Scale]:
    """A passive party's block in the active party's row order, from its alignment state (NaN where it holds no row).

    Parameters
    ----------
    x : numpy.ndarray
        The party's raw features, in its own row order.
    alignment : ClientState
        Its :class:`AlignmentClient` state: ``rows``, ``positions`` and ``active_rows``.

    Returns
    -------
    block : numpy.ndarray
        float32 ``(active_rows, d)``, standardised over the rows the party serves.
    scale : (mean, std)
        That standardisation (what a model of the party's raw columns applies).
    """
    served = x[alignment.arrays["rows"]]
    scale = _scale(served)
    block = _unheld(as_int(alignment.config["active_rows"]), x.shape[1])
    block[alignment.arrays["positions"]] = _standardised(served, scale)
    return block, scale


def node_data(tables: TablesSection, party: int, block: np.ndarray, test: np.ndarray) -> VerticalData:
    """What a passive party's node knows of the task: its own block, the test rows, no label and no other block."""
    n = len(block)
    present = np.zeros((n, len(tables.parties)), dtype=bool)
    present[:, 0] = True  # the task's rows are the active party's
    present[:, party] = ~np.isnan(block).all(axis=1)
    blocks = [block if k == party else _unheld(n, p.width) for k, p in enumerate(tables.parties)]
    return _split(blocks, present, np.full(n, UNLABELED, dtype=np.int64), test, tables)


def _test_rows(y: np.ndarray, tables: TablesSection, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The seeded test rows among the labeled ones, and the labels with the training label budget applied."""
    labeled = np.flatnonzero(y != UNLABELED)
    if len(labeled) < 2:
        raise ConfigError(
            "tables.parties.0.file",
            f"the active party labels {len(labeled)} rows ({f'column {tables.label!r}' if tables.label else 'array y'}); at least 2 are needed",
        )
    rng = derive_rng(seed, "tables-vertical")
    test = np.sort(rng.choice(labeled, size=max(1, round(tables.test_fraction * len(labeled))), replace=False))
    labels = y.copy()
    if tables.label_budget is not None:
        train = np.setdiff1d(np.arange(len(y)), test)
        held = train[y[train] != UNLABELED]
        labels[rng.permutation(held)[tables.label_budget :]] = UNLABELED
    return test, labels


def _split(
    blocks: list[np.ndarray], present: np.ndarray, labels: np.ndarray, test: np.ndarray, tables: TablesSection
) -> VerticalData:
    """The training split (every row but ``test``) and the test split of ``blocks``, with the ``.npz`` parties' shapes."""
    train = np.setdiff1d(np.arange(len(labels)), test)

    def rows(chosen: np.ndarray) -> VerticalSplit:
        return VerticalSplit([b[chosen] for b in blocks], present[chosen], labels[chosen])

    arrays = any(party.shape is not None for party in tables.parties)
    shapes = tuple(party.example_shape for party in tables.parties) if arrays else None
    return VerticalData(rows(train), {TEST_SETTING: rows(test)}, len(tables.classes), "gaussian", shapes=shapes)


def _unheld(rows: int, width: int) -> np.ndarray:
    """A block of ``rows`` rows nobody here holds (NaN, so that reading it fails loudly)."""
    return np.full((rows, width), np.nan, dtype=np.float32)


def _scale(x: np.ndarray) -> Scale:
    """A party's own mean and standard deviation of its columns over the rows given (they stay with it)."""
    mean, spread = x.mean(axis=0), x.std(axis=0)
    spread[spread == 0] = 1.0
    return mean, spread


def _standardised(x: np.ndarray, scale: Scale) -> np.ndarray:
    """``x`` standardised by ``scale``."""
    standardised: np.ndarray = ((x - scale[0]) / scale[1]).astype(np.float32)
    return standardised
