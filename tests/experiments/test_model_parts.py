"""The "export your part" message: a client writes its part where it runs and replies with its digest only."""

import hashlib
from pathlib import Path

import numpy as np
import pytest

from fedmosaic.experiments.model_parts import PartWriter, export_parts
from fedmosaic.federation import ClientContext, ClientLogic, ClientState, InProcessGrid, Message
from fedmosaic.models.export import ModelExport


class _Party(ClientLogic):
    """Keeps a part ``w`` of its own; answers any other message with ``echo``."""

    def handle(self, message: Message, state: ClientState, context: ClientContext) -> Message:
        return Message(kind="echo")

    def exported_part(self, state: ClientState) -> dict[str, np.ndarray] | None:
        return {"w": np.full(2, 7.0, np.float32)}


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
