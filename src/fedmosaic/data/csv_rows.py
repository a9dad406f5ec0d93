"""Reading a CSV file whose every row has as many cells as its header.

pandas reads a file whose data rows have more cells than the header by
taking the first cells as an index, and fills rows with fewer cells with
missing values: either way the columns shift without a word. Every CSV
fedmosaic reads goes through :func:`read_csv`, which refuses such a file
naming the first ragged line.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pandas as pd


def ragged_line(path: Path) -> str | None:
    r"""Where the first data row of ``path`` has another number of cells than its header, or None.

    Blank lines are skipped (pandas skips them too). The line is counted
    from 1 with the header as line 1, as an editor shows it.

    Examples
    --------
    >>> import tempfile
    >>> file = Path(tempfile.mkdtemp()) / "rows.csv"
    >>> _ = file.write_text("a,b\n1,2\n\n3,4,5,6\n")
    >>> ragged_line(file)
    'line 4 has 4 cells, the header 2'
    >>> _ = file.write_text('a,b\n1,"two\nlines"\n')
    >>> ragged_line(file) is None
    True
    """
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle)
        header = next(reader, None)
        if header is None:
            return None
        for row in reader:
            if row and len(row) != len(header):
                return f"line {reader.line_num} has {len(row)} cells, the header {len(header)}"
    return None


def read_csv(path: Path, **options: Any) -> pd.DataFrame:
    """``pandas.read_csv`` of a file whose rows all have the header's number of cells.

    Parameters
    ----------
    path : Path
        The file (UTF-8).
    **options
        Passed on to :func:`pandas.read_csv` (never an index column).

    Raises
    ------
    ValueError
        Naming the first line with too many or too few cells (or a byte that is not UTF-8).
    """
    ragged = ragged_line(path)
    if ragged is not None:
        raise ValueError(ragged)
    return pd.read_csv(path, index_col=False, **options)
