"""Predicting with a vertical model from the parties' own tables: rows aligned by private set intersection.

A vertical model trained on parties' own tables (``[tables] kind =
"vertical"``, in process) reads every party's raw columns and standardises
each party's with that party's statistics (its card's
``inputs.standardise``). Given one table per party, each with the ID column
and that party's columns, the active party's rows are the rows predicted:
each passive party's table is aligned with the active party's by the same
private set intersection as training (:func:`~fedmosaic.preparation.alignment.align`),
and a row a passive party does not hold is an absent block. A party whose
table is left out is absent from every row: FALSE-VFL and LASER-VFL predict
without it; the other methods need every party's table.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from fedmosaic.data.csv_rows import read_csv
from fedmosaic.data.tables.npz import read_npz_party
from fedmosaic.errors import ConfigError
from fedmosaic.models.apply import prediction_table
from fedmosaic.models.card import ModelFileError
from fedmosaic.models.loaded import LoadedModel
from fedmosaic.preparation.alignment import align

WITHOUT_A_PARTY = frozenset({"false-vfl", "laser-vfl"})
"""Methods whose models predict with a party's table left out (an absent block)."""
PARTIES = "parties"
"""Column of the prediction table: the tables that hold each row."""


def reads_party_tables(model: LoadedModel) -> bool:
    """Whether ``model`` predicts from the parties' own tables (a vertical model trained on them, in process)."""
    schema = model.card["inputs"]
    return "id" in schema and "standardise" in schema


def party_tables_prediction(model: LoadedModel, paths: Sequence[Path]) -> pd.DataFrame:
    """The active party's rows: their ID, each class's probability, and the tables that hold them.

    Parameters
    ----------
    model : LoadedModel
        A model for which :func:`reads_party_tables` holds.
    paths : sequence of Path
        One CSV or Parquet table per party given, in any order; each is
        matched to the party whose columns it holds. The active party's is
        required.

    Raises
    ------
    ModelFileError
        A table without the ID column, with no party's columns, or with a
        party's columns another table already gave; no active party's table;
        a left-out party for a method that needs every party.
    """
    schema = model.card["inputs"]
    parties, id_column = [list(columns) for columns in schema[PARTIES]], str(schema["id"])
    shapes = [None if shape is None else tuple(shape) for shape in schema.get("party_shapes", [None] * len(parties))]
    tables = _match_parties(parties, id_column, paths, shapes)
    if 0 not in tables:
        raise ModelFileError(
            f"INPUT: the active party's table (ID column {id_column!r} and columns {parties[0][:3]}...) is needed: its rows are the rows predicted"
        )
    absent = [k for k in range(len(parties)) if k not in tables]
    method = str(model.card["method"])
    if absent and method not in WITHOUT_A_PARTY:
        raise ModelFileError(
            f"INPUT: no table of party {absent[0]} (columns {parties[absent[0]][:3]}...); a {method} model needs every party's table"
            " (FALSE-VFL and LASER-VFL predict without one)"
        )
    ids = {k: [str(v) for v in frame[id_column]] for k, (_, frame) in tables.items()}
    passive = sorted(k for k in tables if k > 0)
    present, served = align(ids[0], [ids[k] for k in passive], seed=0)
    bounds = np.cumsum([0, *(len(columns) for columns in parties)])
    x = np.full((len(ids[0]), int(bounds[-1])), np.nan)
    x[:, bounds[0] : bounds[1]] = tables[0][1][parties[0]].to_numpy(dtype=np.float64)
    for (rows, positions), k in zip(served, passive, strict=True):
        x[positions, bounds[k] : bounds[k + 1]] = tables[k][1][parties[k]].to_numpy(dtype=np.float64)[rows]
    probabilities = prediction_table(model, pd.DataFrame(x, columns=[c for columns in parties for c in columns]))
    names = [tables[0][0]] + [tables[k][0] for k in passive]
    holders = [";".join(name for name, held in zip(names, row, strict=True) if held) for row in present]
    return pd.concat([pd.DataFrame({id_column: ids[0]}), probabilities, pd.DataFrame({PARTIES: holders})], axis=1)


def _match_parties(
    parties: list[list[str]], id_column: str, paths: Sequence[Path], shapes: Sequence[tuple[int, ...] | None]
) -> dict[int, tuple[str, pd.DataFrame]]:
    """Each table read (IDs as text) and matched to the party whose columns it holds, by party index.

    An ``.npz`` file goes to the first ``.npz`` party not yet given whose
    examples have the shape of its ``x`` (``shapes``).
    """
    tables: dict[int, tuple[str, pd.DataFrame]] = {}
    for path in paths:
        frame = _read_npz(path, id_column, parties, shapes, tables) if path.suffix.lower() == ".npz" else None
        frame = _read(path, id_column) if frame is None else frame
        if id_column not in frame.columns:
            raise ModelFileError(f"{path}: no ID column {id_column!r}")
        matches = [k for k, columns in enumerate(parties) if set(columns) <= set(frame.columns)]
        if not matches:
            wanted = "; ".join(f"party {k}: {columns[:3]}..." for k, columns in enumerate(parties))
            raise ModelFileError(f"{path}: holds no party's columns ({wanted})")
        party = matches[0]
        if party in tables:
            raise ModelFileError(f"{path}: party {party}'s columns, which {tables[party][0]} gives already")
        for column in parties[party]:
            if not pd.api.types.is_numeric_dtype(frame[column]):
                raise ModelFileError(f"{path}: column {column!r} has dtype {frame[column].dtype}, expected numbers")
        tables[party] = (path.name, frame)
    return tables


def _read_npz(
    path: Path,
    id_column: str,
    parties: list[list[str]],
    shapes: Sequence[tuple[int, ...] | None],
    given: dict[int, tuple[str, pd.DataFrame]],
) -> pd.DataFrame:
    """An ``.npz`` party's ``ids`` and ``x`` as a table of the party's columns (see :func:`_match_parties`)."""
    try:
        arrays = read_npz_party(str(path), "INPUT", None, None, ignore_y=True)
    except ConfigError as error:
        raise ModelFileError(f"{path}: {error.message}") from None
    party = next((k for k, shape in enumerate(shapes) if shape == arrays.shape and k not in given), None)
    if party is None:
        wanted = [shape for shape in shapes if shape is not None]
        raise ModelFileError(
            f"{path}: x holds examples of shape {arrays.shape}; this model's .npz parties take {wanted}"
        )
    frame = pd.DataFrame(arrays.x, columns=parties[party])
    frame.insert(0, id_column, arrays.ids)
    return frame


def _read(path: Path, id_column: str) -> pd.DataFrame:
    """A party's table, its ID column read as text (so that ``007`` stays ``007``)."""
    if not path.is_file():
        raise ModelFileError(f"{path}: no such input file")
    try:
        if path.suffix.lower() == ".parquet":
            frame = pd.read_parquet(path)
            return frame.astype({id_column: str}) if id_column in frame.columns else frame
        return read_csv(path, dtype={id_column: str})
    except (OSError, ValueError, pd.errors.ParserError, pd.errors.EmptyDataError) as error:
        raise ModelFileError(
            f"{path}: cannot read it ({str(error).splitlines()[0] if str(error) else type(error).__name__})"
        ) from None
