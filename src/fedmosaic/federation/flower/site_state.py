"""Client states on the site's own disk, per job and round, so that they survive a restart.

Flower's ``context.state`` lives in the SuperNode's memory: a restarted
SuperNode, or a new ``flwr run`` (which is what ``--resume`` submits), starts
from an empty one. A site whose SuperNode has a ``state-dir`` node config
also writes each client state it ends a message with to
``<state-dir>/<job>/client-<id>/round-<r>.npz`` (the checkpoint format,
written atomically: a crash leaves the old file or the new one). When a
message finds no state of its own run in ``context.state``, the client
continues from the state saved at its latest round before the message's
round, which is the state it ended that round with; files of that round and
later belong to a run that was abandoned there and are removed. A site keeps
its client's last two rounds (:data:`KEEP`).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from fedmosaic.federation.checkpoint import Checkpoint, load_checkpoint, save_checkpoint
from fedmosaic.federation.state import ClientState

STATE_DIR = "state-dir"
"""Node config key naming the folder where a site keeps its client states."""
KEEP = 2
"""Rounds kept per client: the server checkpoints every round before it sends the next one, so a
site is at most one round ahead of the server's last checkpoint, and a resume needs the round before."""


class SiteStates:
    """The client states a site keeps in ``folder``.

    Parameters
    ----------
    folder : Path
        The site's state folder (its ``state-dir`` node config).

    Examples
    --------
    >>> import tempfile, numpy as np
    >>> states = SiteStates(Path(tempfile.mkdtemp()))
    >>> states.save("job", 0, 1, ClientState(arrays={"c": np.ones(2)}, config={"n": 1}))
    >>> states.load_before("job", 0, 2).config, states.load_before("job", 0, 1)
    ({'n': 1}, None)
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def save(self, job: str, client: int, rnd: int, state: ClientState) -> None:
        """Write ``state`` as client ``client``'s state at the end of its message of round ``rnd``."""
        checkpoint = Checkpoint(fingerprint=job, server=ClientState(), clients={client: state})
        save_checkpoint(checkpoint, self._client_folder(job, client) / f"round-{rnd:06d}.npz")
        for older in sorted(self._rounds(job, client))[:-KEEP]:
            (self._client_folder(job, client) / f"round-{older:06d}.npz").unlink(missing_ok=True)

    def load_before(self, job: str, client: int, rnd: int) -> ClientState | None:
        """The state saved at the client's latest round before ``rnd`` (``None`` if none); drop later ones."""
        rounds = sorted(self._rounds(job, client))
        for later in (r for r in rounds if r >= rnd):
            (self._client_folder(job, client) / f"round-{later:06d}.npz").unlink(missing_ok=True)
        earlier = [r for r in rounds if r < rnd]
        if not earlier:
            return None
        saved = load_checkpoint(self._client_folder(job, client) / f"round-{earlier[-1]:06d}.npz")
        return saved.clients[client]

    def _rounds(self, job: str, client: int) -> list[int]:
        return [int(path.stem.split("-")[1]) for path in self._client_folder(job, client).glob("round-*.npz")]

    def _client_folder(self, job: str, client: int) -> Path:
        return self.folder / hashlib.sha256(job.encode()).hexdigest()[:24] / f"client-{client}"
