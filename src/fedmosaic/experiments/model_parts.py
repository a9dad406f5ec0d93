"""The parts of a model that clients keep, written by each client where it runs: one "export your part" message.

After a job's last round, the coordinator sends every client whose part of
the model it does not hold (a vertical task's passive parties,
``ModelExport.client_parts``) one message of kind :data:`EXPORT_PART`,
through the job's grid like any message: it names the part and the model
folder, relative to the output folder (``model/00-plugvfl``). The client,
wrapped in :class:`PartWriter` by whoever builds it, writes its part
(:func:`fedmosaic.models.parts.write_part`) into that folder under its own
root and replies with the weights file's SHA-256, which the coordinator's
card records; the weights never travel. The root is where the client runs:

- in process, the run's output folder, so the parts land beside the
  coordinator's card in the run's model folder;
- on a Flower node, ``<state-dir>/<experiment>/`` (:func:`node_parts_root`),
  the node's own disk. A node without a ``state-dir`` (the virtual nodes
  of Flower's simulation) writes nothing and says so; the coordinator logs
  it, and the card lists that part without a digest.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

import numpy as np
from typing_extensions import override

from fedmosaic.experiments.aggregation import secure_client
from fedmosaic.experiments.config import ExperimentConfig
from fedmosaic.experiments.model_cards import slug
from fedmosaic.experiments.table_cards import scale_entry
from fedmosaic.experiments.table_vertical import Scale
from fedmosaic.federation import ClientContext, ClientJob, ClientLogic, ClientState, Grid, Message
from fedmosaic.models.export import ModelExport
from fedmosaic.models.parts import write_part

EXPORT_PART = "query.fedmosaic-export-part"
"""Kind of the message asking a client to write its part of the model."""
PART, FOLDER, SHA256 = "part", "folder", "sha256"
NOT_WRITTEN = "not-written"
"""Config entry of a reply whose client wrote nothing: why."""

log = logging.getLogger("fedmosaic.model-parts")


class PartWriter(ClientLogic):
    """A client that writes its part of the model when asked; every other message goes to the wrapped client.

    Parameters
    ----------
    logic : ClientLogic
        The method's client (its :meth:`~ClientLogic.exported_part` is the part).
    root : Path or None
        Where the client writes: the part goes to ``root / <message's folder>``.
        None: it has nowhere to write, and says so in its reply (logged by
        the coordinator; the card lists the part without a digest).
    details : mapping, default empty
        JSON-ready facts for the part card (the party's standardisation).
    """

    def __init__(self, logic: ClientLogic, root: Path | None, details: Mapping[str, Any] | None = None) -> None:
        self._logic = logic
        self._root = root
        self._details = dict(details or {})

    @override
    def handle(self, message: Message, state: ClientState, context: ClientContext) -> Message:
        if message.kind != EXPORT_PART:
            return self._logic.handle(message, state, context)
        if self._root is None:
            return Message(kind=EXPORT_PART, config={NOT_WRITTEN: 'no folder to write it to (node config "state-dir")'})
        arrays = self._logic.exported_part(state)
        if arrays is None:
            return Message(kind=EXPORT_PART)
        folder, name = str(message.config[FOLDER]), str(message.config[PART])
        digest = write_part(self._root / folder, name, arrays, {"model": folder, **self._details})
        return Message(kind=EXPORT_PART, config={SHA256: digest})

    @override
    def batch_key(self, message: Message) -> Hashable | None:
        """The wrapped client's key with its class, so that its messages are batched as its method batches them.

        An export message is handled alone.
        """
        if message.kind == EXPORT_PART:
            return None
        key = self._logic.batch_key(message)
        return None if key is None else (type(self._logic), key)

    @classmethod
    @override
    def handle_many(cls, jobs: Sequence[ClientJob]) -> list[Message]:
        """The wrapped clients handle the jobs together (:meth:`batch_key` grouped them by their class and key)."""
        wrapped = [replace(job, logic=cast(PartWriter, job.logic)._logic) for job in jobs]
        return wrapped[0].logic.handle_many(wrapped)

    @override
    def exported_part(self, state: ClientState) -> dict[str, np.ndarray] | None:
        return self._logic.exported_part(state)


def run_client(
    config: ExperimentConfig, logic: ClientLogic, root: Path | None, details: Mapping[str, Any], *, secure: bool
) -> ClientLogic:
    """A run's client as every engine builds it: the method's ``logic``, writing its part into ``root`` when asked.

    In secure aggregation when it is on (``secure``: a federated run).
    """
    return PartWriter(secure_client(config, logic) if secure else logic, root, details)


def export_parts(grid: Grid, export: ModelExport, folder: str, rnd: int) -> dict[str, str]:
    """Ask each client that keeps a part of ``export`` to write it into ``folder``; the SHA-256 of each part written.

    Parameters
    ----------
    grid : Grid
        The job's grid (the engine's, any engine).
    export : ModelExport
        The model the server exported; ``client_parts[c]`` is client ``c``'s part.
    folder : str
        The model folder relative to the output folder (``model/00-plugvfl``).
    rnd : int
        A round after the job's last (the clients' states are those it ended with).

    Returns
    -------
    dict of str to str
        By part name; a client that did not write its part is absent.
    """
    messages = {
        client: Message(kind=EXPORT_PART, config={PART: name, FOLDER: folder})
        for client, name in enumerate(export.client_parts)
    }
    if not messages:
        return {}
    replies = grid.send_and_receive(messages, rnd, frozenset())
    for client, reply in replies.items():
        if NOT_WRITTEN in reply.config:
            log.warning("client %d did not write its part of the model: %s", client, reply.config[NOT_WRITTEN])
    return {
        export.client_parts[client]: str(reply.config[SHA256])
        for client, reply in replies.items()
        if SHA256 in reply.config
    }


def party_details(scales: Sequence[Scale | None], client: int) -> dict[str, Any]:
    """What client ``client``'s part card says besides its name: on parties' own tables, its party's standardisation.

    ``scales`` are the parties' (the active party's first; empty where the
    task has none); client ``c`` is party ``c + 1``.

    Examples
    --------
    >>> party_details([], 0)
    {}
    """
    scale = scales[client + 1] if client + 1 < len(scales) else None
    return {} if scale is None else {"standardise": scale_entry(scale)}


def node_parts_root(state_dir: object, experiment: str) -> Path | None:
    """Where a Flower node writes its parts of experiment ``experiment``: ``<state-dir>/<experiment>`` (None without a ``state-dir``).

    Examples
    --------
    >>> node_parts_root("/srv/lab", "Clinic, lab & imaging").as_posix()
    '/srv/lab/clinic-lab-imaging'
    >>> node_parts_root(None, "x") is None
    True
    """
    return None if state_dir in (None, "") else Path(str(state_dir)) / slug(experiment)
