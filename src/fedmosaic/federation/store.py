"""Client states between rounds: in memory up to a budget, the least recently used on disk past it."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from pathlib import Path

import numpy as np

from fedmosaic.federation.state import ClientState

_CONFIG = "__config__"


class StateStore:
    """Holds every client's :class:`ClientState`; only a budget of them stays in memory.

    A state that would push the memory held past ``budget_bytes`` sends the
    least recently used states to disk (one ``.npz`` file each, no pickle);
    using a spilled state reads it back. Clients that keep nothing (FedAvg)
    cost a few bytes each.

    Parameters
    ----------
    budget_bytes : int or None, default None
        Memory for states; ``None``: no limit.

    Examples
    --------
    >>> import numpy as np
    >>> store = StateStore(budget_bytes=100)
    >>> store.get(0).arrays["m"] = np.zeros(10)  # 80 bytes
    >>> store.get(1).arrays["m"] = np.ones(10)
    >>> store.trim()   # over budget: client 0 goes to disk
    >>> store.spilled
    [0]
    >>> float(store.get(0).arrays["m"].sum()), store.spilled
    (0.0, [])
    >>> store.close()
    """

    def __init__(self, budget_bytes: int | None = None) -> None:
        if budget_bytes is not None and budget_bytes < 0:
            raise ValueError(f"budget_bytes must be >= 0, got {budget_bytes}")
        self._budget = budget_bytes
        self._memory: OrderedDict[int, ClientState] = OrderedDict()
        self._on_disk: set[int] = set()
        self._folder: Path | None = None

    def get(self, client: int) -> ClientState:
        """The state of ``client`` (empty for a client seen for the first time), now in memory."""
        if client in self._on_disk:
            self._memory[client] = self._read(client)
            self._on_disk.discard(client)
        state = self._memory.setdefault(client, ClientState())
        self._memory.move_to_end(client)
        return state

    def trim(self) -> None:
        """Send the least recently used states to disk until the rest fit in the budget."""
        if self._budget is None:
            return
        held = sum(state.nbytes() for state in self._memory.values())
        while held > self._budget and self._memory:
            client, state = self._memory.popitem(last=False)
            held -= state.nbytes()
            self._write(client, state)

    @property
    def spilled(self) -> list[int]:
        """Clients whose state is on disk."""
        return sorted(self._on_disk)

    def __contains__(self, client: object) -> bool:
        return client in self._memory or client in self._on_disk

    def __iter__(self) -> Iterator[int]:
        return iter(sorted([*self._memory, *self._on_disk]))

    def snapshot(self) -> dict[int, ClientState]:
        """Every state (spilled ones read back, without moving them to memory)."""
        return {c: self._memory[c] if c in self._memory else self._read(c) for c in self}

    def replace(self, states: Mapping[int, ClientState]) -> None:
        """Hold exactly ``states`` (e.g. restored from a checkpoint)."""
        self.close()
        self._memory = OrderedDict(sorted(states.items()))
        self.trim()

    def close(self) -> None:
        """Forget every state and delete the spill folder."""
        self._memory.clear()
        self._on_disk.clear()
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None

    def _path(self, client: int) -> Path:
        if self._folder is None:
            self._folder = Path(tempfile.mkdtemp(prefix="fedmosaic-states-"))
        return self._folder / f"client-{client}.npz"

    def _write(self, client: int, state: ClientState) -> None:
        config = np.frombuffer(json.dumps(state.config).encode(), dtype=np.uint8)
        with open(self._path(client), "wb") as handle:
            arrays = {f"a/{k}": np.asarray(v) for k, v in state.arrays.items()} | {_CONFIG: config}
            # mypy matches unpacked **arrays against savez's allow_pickle: bool too (it cannot know the keys).
            np.savez(handle, **arrays)  # type: ignore[arg-type]
        self._on_disk.add(client)

    def _read(self, client: int) -> ClientState:
        with np.load(self._path(client), allow_pickle=False) as data:
            arrays = {k.removeprefix("a/"): data[k] for k in data.files if k != _CONFIG}
            config = json.loads(bytes(data[_CONFIG]).decode())
        return ClientState(arrays=arrays, config=config)
