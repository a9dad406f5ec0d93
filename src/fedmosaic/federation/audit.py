"""The message audit: a log of what every message carried, as JSON lines.

Each line describes one message that crossed a party boundary: its round,
client, direction (``down`` to the client, ``up`` from it), kind, byte
count, and for every array its name, shape, dtype and bytes, with the names
of its config keys and its metrics (metric values are scalars the method
declares, such as ``num_examples``). Array contents are never written, so
the log shows exactly what leaves each site without repeating it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fedmosaic.atomic import atomic_write_bytes
from fedmosaic.federation.message import Message


def describe(rnd: int, client: int, direction: str, message: Message) -> dict[str, Any]:
    """One log entry for ``message``.

    Examples
    --------
    >>> import numpy as np
    >>> entry = describe(1, 0, "up", Message(arrays={"w": np.zeros((2, 3), np.float32)}, metrics={"num_examples": 5.0}))
    >>> entry["arrays"], entry["bytes"]
    ({'w': {'shape': [2, 3], 'dtype': 'float32', 'bytes': 24}}, 44)
    """
    return {
        "round": rnd,
        "client": client,
        "direction": direction,
        "kind": message.kind,
        "bytes": message.nbytes(),
        "arrays": {
            name: {"shape": list(a.shape), "dtype": str(a.dtype), "bytes": int(a.nbytes)}
            for name, a in message.arrays.items()
        },
        "config": sorted(message.config),
        "metrics": dict(message.metrics),
    }


class MessageLog:
    """Appends one JSON line per message to ``path`` (a :data:`~fedmosaic.federation.round.MessageObserver`).

    Parameters
    ----------
    path : Path
        The log file; its folder is created.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)

    def __call__(self, rnd: int, client: int, direction: str, message: Message) -> None:
        """Append the line of one message of round ``rnd`` to or from ``client`` (``direction``: down or up)."""
        with self.path.open("a") as handle:
            handle.write(json.dumps(describe(rnd, client, direction, message)) + "\n")

    def keep_rounds(self, last: int) -> None:
        """Drop entries after round ``last`` (those of an interrupted round, before it is run again)."""
        if not self.path.exists():
            return
        kept = [line for line in self.path.read_text().splitlines() if json.loads(line)["round"] <= last]
        self.path.write_text("".join(f"{line}\n" for line in kept))


class MessageRecord:
    """Keeps the audit entries of an exchange in memory, to write them once the output folder is claimed.

    The exchanges that prepare a run's data (feature scaling, row alignment)
    run before the run may write into its output folder.

    Parameters
    ----------
    name : str
        The log's name: :meth:`write` writes ``<name>.jsonl``.

    Examples
    --------
    >>> import tempfile
    >>> record = MessageRecord("scaling")
    >>> record(1, 0, "down", Message(kind="query.moments"))
    >>> [entry["kind"] for entry in read_log(record.write(Path(tempfile.mkdtemp())))]
    ['query.moments']
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.entries: list[dict[str, Any]] = []

    def __call__(self, rnd: int, client: int, direction: str, message: Message) -> None:
        """Keep the entry of one message."""
        self.entries.append(describe(rnd, client, direction, message))

    def write(self, folder: Path) -> Path:
        """Write the entries to ``<folder>/<name>.jsonl`` (replacing an earlier log) and return its path."""
        path = folder / f"{self.name}.jsonl"
        atomic_write_bytes(path, "".join(json.dumps(entry) + "\n" for entry in self.entries).encode())
        return path


def read_log(path: Path) -> list[dict[str, Any]]:
    """The entries of a message log."""
    return [json.loads(line) for line in path.read_text().splitlines() if line]
