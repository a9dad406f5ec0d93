"""The "export your part" message: a client writes its part where it runs and replies with its digest only."""

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest

from fedmosaic.experiments.model_parts import PartWriter, export_parts
from fedmosaic.federation import ClientContext, ClientJob, ClientLogic, ClientState, InProcessGrid, Message
from fedmosaic.models.export import ModelExport


class _Party(ClientLogic):
    """Keeps a part ``w`` of its own; answers any other message with ``echo``."""

    def handle(self, message: Message, state: ClientState, context: ClientContext) -> Message:
        return Message(kind="echo")

    def exported_part(self, state: ClientState) -> dict[str, np.ndarray] | None:
        return {"w": np.full(2, 7.0, np.float32)}


class _BatchedParty(_Party):
    """A party whose messages are batchable; records the clients of each group it is handed, and who handled it."""

    groups: ClassVar[list[tuple[list[int], bool]]] = []

    def batch_key(self, message: Message) -> str:
        return "step"

    @classmethod
    def handle_many(cls, jobs: Sequence[ClientJob]) -> list[Message]:
        unwrapped = all(isinstance(job.logic, _BatchedParty) for job in jobs)
        cls.groups.append(([job.context.client_id for job in jobs], unwrapped))
        return super().handle_many(jobs)


def test_wrapped_clients_are_batched_as_their_method_batches_them_and_export_messages_are_not(tmp_path: Path) -> None:
    # Prepare: three parties of a method that batches its messages
    _BatchedParty.groups = []
    grid = InProcessGrid(lambda client: PartWriter(_BatchedParty(), tmp_path / f"site-{client}"), seed=0)
    export = ModelExport("split-vfl", {}, {}, part="party-0", client_parts=("party-1", "party-2", "party-3"))
    # Execute
    replies = grid.send_and_receive({client: Message() for client in range(3)}, 1, frozenset())
    written = export_parts(grid, export, "model/00-run", rnd=2)
    # Assert: the round's messages reached the wrapped parties' handle_many as one group; exports went one by one
    assert [reply.kind for reply in replies.values()] == ["echo"] * 3
    assert _BatchedParty.groups == [([0, 1, 2], True)]
    assert sorted(written) == ["party-1", "party-2", "party-3"]


def test_each_client_writes_its_part_under_its_root_and_replies_with_its_digest_only(tmp_path: Path) -> None:
    # Prepare: two parties, each with a root of its own
    grid = InProcessGrid(lambda client: PartWriter(_Party(), tmp_path / f"site-{client}", {"note": client}), seed=0)
    export = ModelExport("split-vfl", {}, {}, part="party-0", client_parts=("party-1", "party-2"))
    # Execute
    written = export_parts(grid, export, "model/00-run", rnd=3)
    # Assert: the files are at each site, the digests are theirs
    for client, name in enumerate(("party-1", "party-2")):
        folder = tmp_path / f"site-{client}" / "model" / "00-run"
        assert sorted(p.name for p in folder.iterdir()) == [f"{name}.json", f"{name}.safetensors"]
        assert written[name] == hashlib.sha256((folder / f"{name}.safetensors").read_bytes()).hexdigest()


def test_other_messages_reach_the_wrapped_client_and_a_client_with_no_root_says_it_wrote_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Prepare
    grid = InProcessGrid(lambda client: PartWriter(_Party(), None), seed=0)
    export = ModelExport("split-vfl", {}, {}, part="party-0", client_parts=("party-1",))
    # Execute
    echo = grid.send_and_receive({0: Message()}, 1, frozenset())
    written = export_parts(grid, export, "model/00-run", rnd=2)
    # Assert
    assert echo[0].kind == "echo"
    assert written == {}
    assert (
        'client 0 did not write its part of the model: no folder to write it to (node config "state-dir")'
        in caplog.text
    )
