"""Read one site's table and turn its columns into arrays, checked against the shared schema.

Every problem is one line naming the file, the column and, for a bad cell,
its row (counted from 1 after the header, as a spreadsheet shows it).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from fedmosaic.data.csv_rows import read_csv
from fedmosaic.errors import ConfigError

SUFFIXES = (".csv", ".parquet", ".pq")
"""File types a table may have."""
UNLABELED = -1
"""Code of an empty cell in a category column."""
ROWS_PER_CHUNK = 20_000
"""Rows of a CSV file parsed at a time: each chunk's cells become compact text columns before the next is parsed,
so that reading costs about three times the file's size, not six."""
FEATURE_LIMIT = 1e15
"""The largest magnitude of a feature.

Features are float32 and standardised in float32 (a vertical party's own
statistics): a value's square summed over 10^8 rows must stay below
float32's largest, 3.4e38. Larger values are almost always an ID or a
unit's mistake; rescale the column.
"""


@dataclass(frozen=True)
class Table:
    """A table read from a file, every cell as text (an empty cell is ``""``).

    Parameters
    ----------
    cells : pandas.DataFrame
        The cells, one column per table column, as ``str``.
    path : str
        Where it was read from (for messages).
    field : str
        The configuration field that named the file (for messages).
    """

    cells: pd.DataFrame
    path: str
    field: str

    def __len__(self) -> int:
        return len(self.cells)

    @property
    def where(self) -> str:
        """How messages name the table: its field and file."""
        return f"{self.field} ({Path(self.path).name})"

    def has(self, column: str) -> bool:
        """Whether the table holds ``column``."""
        return column in self.cells.columns

    def require(self, columns: list[str]) -> None:
        """Reject a table that lacks one of ``columns``."""
        missing = [c for c in columns if c not in self.cells.columns]
        if missing:
            raise ConfigError(
                self.field,
                f"{Path(self.path).name} has no column {missing[0]!r} (columns: {', '.join(map(str, self.cells.columns))})",
            )

    def numbers(self, columns: list[str], dtype: type = np.float32) -> np.ndarray:
        """The ``columns`` as ``dtype`` (default float32) ``(n, len(columns))``; every cell must be a finite number."""
        self.require(columns)
        out: np.ndarray = np.empty((len(self), len(columns)), dtype=dtype)
        for k, column in enumerate(columns):
            text = self.cells[column]
            values = pd.to_numeric(text, errors="coerce").to_numpy(dtype=np.float64)
            bad = np.flatnonzero(~np.isfinite(values))
            if len(bad):
                row = int(bad[0])
                raise ConfigError(
                    self.field,
                    f"{Path(self.path).name}, column {column!r}, row {row + 1}: expected a number, got {text.iloc[row]!r}",
                )
            huge = np.flatnonzero(np.abs(values) > FEATURE_LIMIT)
            if len(huge):
                row = int(huge[0])
                raise ConfigError(
                    self.field,
                    f"{Path(self.path).name}, column {column!r}, row {row + 1}: {text.iloc[row]} is out of range"
                    f" (a feature is a float32 within ±{FEATURE_LIMIT:.0e}; rescale the column)",
                )
            out[:, k] = values
        return out

    def categories(self, column: str, categories: list[str], schema_field: str) -> np.ndarray:
        """The codes of ``column`` by ``categories`` (int64), ``UNLABELED`` for an empty cell."""
        self.require([column])
        text = self.cells[column].to_numpy(dtype=object)
        lookup = {name: code for code, name in enumerate(categories)}
        codes = np.full(len(text), UNLABELED, dtype=np.int64)
        for row, value in enumerate(text):
            if value == "":
                continue
            if value not in lookup:
                raise ConfigError(
                    self.field,
                    f"{Path(self.path).name}, column {column!r}, row {row + 1}: {value!r} is not a category of "
                    f"{schema_field} ({', '.join(categories)})",
                )
            codes[row] = lookup[value]
        return codes

    def text(self, column: str) -> list[str]:
        """The cells of ``column`` as text."""
        self.require([column])
        return [str(v) for v in self.cells[column].to_numpy(dtype=object)]


def read_table(path: str, field: str) -> Table:
    r"""Read a CSV or Parquet table, every cell as text.

    Parameters
    ----------
    path : str
        The file.
    field : str
        The configuration field that names it (``tables.sites.0.file``).

    Raises
    ------
    ConfigError
        If the file is missing, of another type, unreadable, or without rows.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "site.csv").write_text("age,smoke\n41,yes\n57,\n")
    >>> table = read_table(str(folder / "site.csv"), "tables.sites.0.file")
    >>> table.numbers(["age"]).ravel().tolist(), table.categories("smoke", ["no", "yes"], "tables.concepts.smoke").tolist()
    ([41.0, 57.0], [1, -1])
    """
    file = Path(path)
    if file.suffix.lower() not in SUFFIXES:
        raise ConfigError(field, f"{file.name}: expected a .csv or .parquet file")
    if not file.is_file():
        raise ConfigError(field, f"no such file: {file}")
    try:
        if file.suffix.lower() == ".csv":
            chunks = read_csv(file, dtype=str, keep_default_na=False, na_filter=False, chunksize=ROWS_PER_CHUNK)
            cells = pd.concat([_stripped(chunk) for chunk in chunks], ignore_index=True)
        else:
            frame = pd.read_parquet(file)
            cells = _stripped(
                pd.DataFrame({str(c): [("" if pd.isna(v) else str(v)) for v in frame[c]] for c in frame.columns})
            )
    except (OSError, ValueError, UnicodeDecodeError, pd.errors.ParserError) as error:
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise ConfigError(field, f"cannot read {file.name}: {reason}") from None
    if len(cells) == 0:
        raise ConfigError(field, f"{file.name} has no rows")
    cells.columns = [str(c).strip() for c in cells.columns]
    repeated = cells.columns[cells.columns.duplicated()].tolist()
    if repeated:
        raise ConfigError(field, f"{file.name}: column {repeated[0]!r} repeats")
    return Table(cells=cells, path=str(file), field=field)


def _stripped(cells: pd.DataFrame) -> pd.DataFrame:
    """``cells`` (text) with every cell stripped of surrounding whitespace, a column at a time (no Python object per cell)."""
    return cells.apply(lambda column: column.astype(str).str.strip())
