"""Atomic, pickle-free checkpoints of a federation.

A checkpoint is one ``.npz`` file: every array under a prefixed name and all
other values as a JSON document stored in the ``__meta__`` entry. It is written
to a temporary file in the same folder, flushed to disk and renamed over the
previous checkpoint, so a crash at any moment leaves either the old or the new
checkpoint, never a torn one. Loading never unpickles.
"""

from __future__ import annotations

import json
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fedmosaic.atomic import atomic_write
from fedmosaic.errors import FedmosaicError
from fedmosaic.federation.state import ClientState

FORMAT_VERSION = 1
_META = "__meta__"


@dataclass
class Checkpoint:
    """Everything needed to continue a federation after its last finished round.

    Parameters
    ----------
    fingerprint : str
        Identifies the configuration the run was started with.
    server : ClientState
        The server logic's state.
    clients : dict of int to ClientState
        Client states held by the engine.
    history : list of dict
        One record per finished round.
    finished : bool
        Whether the last round has been run.
    rng : dict of str to numpy.ndarray, default empty
        States of the process-wide random generators
        (:func:`~fedmosaic.federation.rng.capture_rng_states`).
    """

    fingerprint: str
    server: ClientState
    clients: dict[int, ClientState] = field(default_factory=dict)
    history: list[dict[str, Any]] = field(default_factory=list)
    finished: bool = False
    rng: dict[str, np.ndarray] = field(default_factory=dict)


def save_checkpoint(checkpoint: Checkpoint, path: Path) -> None:
    """Write ``checkpoint`` to ``path`` atomically (write, flush, rename)."""
    arrays: dict[str, np.ndarray] = {}
    for name, array in checkpoint.server.arrays.items():
        arrays[f"server/{name}"] = np.asarray(array)
    for client_id, state in checkpoint.clients.items():
        for name, array in state.arrays.items():
            arrays[f"client/{client_id}/{name}"] = np.asarray(array)
    for name, array in checkpoint.rng.items():
        arrays[f"rng/{name}"] = np.asarray(array)
    meta = {
        "format_version": FORMAT_VERSION,
        "fingerprint": checkpoint.fingerprint,
        "server_config": checkpoint.server.config,
        "server_arrays": list(checkpoint.server.arrays),
        "clients": {str(c): {"config": s.config, "arrays": list(s.arrays)} for c, s in checkpoint.clients.items()},
        "history": checkpoint.history,
        "finished": checkpoint.finished,
        "rng": list(checkpoint.rng),
    }
    arrays[_META] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    # mypy matches unpacked **arrays against savez's allow_pickle: bool too (it cannot know the keys).
    atomic_write(path, lambda handle: np.savez(handle, **arrays))  # type: ignore[arg-type]


def load_checkpoint(path: Path) -> Checkpoint:
    """Read a checkpoint written by :func:`save_checkpoint`.

    Raises
    ------
    FedmosaicError
        If the file is unreadable or of another format version.
    """
    try:
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(bytes(data[_META]).decode())
            if meta.get("format_version") != FORMAT_VERSION:
                raise FedmosaicError(
                    f"checkpoint {path} has format {meta.get('format_version')}, expected {FORMAT_VERSION}"
                )
            server = ClientState(
                arrays={name: data[f"server/{name}"] for name in meta["server_arrays"]},
                config=meta["server_config"],
            )
            clients = {
                int(c): ClientState(
                    arrays={name: data[f"client/{c}/{name}"] for name in entry["arrays"]},
                    config=entry["config"],
                )
                for c, entry in meta["clients"].items()
            }
            return Checkpoint(
                fingerprint=meta["fingerprint"],
                server=server,
                clients=clients,
                history=meta["history"],
                finished=meta["finished"],
                rng={name: data[f"rng/{name}"] for name in meta.get("rng", [])},
            )
    except (OSError, ValueError, KeyError, TypeError, AttributeError, zipfile.BadZipFile) as error:
        raise FedmosaicError(f"checkpoint {path} is unreadable: {error}") from None
