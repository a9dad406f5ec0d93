"""A warm site's worker runs fedmosaic's ClientApp only; it takes tasks only with its SuperNode's secret; it pulls a task's message whole."""

import io
import threading
import zipfile
from pathlib import Path

import numpy as np
import pytest
from flwr.app import Array, ArrayRecord, Context, Message, RecordDict
from flwr.app.message import make_message, remove_content_from_message
from flwr.app.metadata import Metadata
from flwr.common.serde import context_to_proto, fab_to_proto, message_to_proto
from flwr.proto.message_pb2 import (
    ConfirmMessageReceivedRequest,
    ConfirmMessageReceivedResponse,
    PullObjectRequest,
    PullObjectResponse,
)
from flwr.proto.run_pb2 import Run
from flwr.proto.runtime_pb2 import (
    PullAppMessagesRequest,
    PullAppMessagesResponse,
    PullTaskInputRequest,
    PullTaskInputResponse,
)
from flwr.supercore.fab import Fab
from flwr.supercore.inflatable.inflatable_object import get_all_nested_objects, get_object_tree

from fedmosaic.deploy.security import make_secret
from fedmosaic.deploy.submit import write_app
from fedmosaic.deploy.wake import FALLBACK_POLL_S
from fedmosaic.deploy.worker import CLIENT_APP, SiteWorker, check_app, pull_task_input


def _bundle(pyproject: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("pyproject.toml", pyproject)
    return buffer.getvalue()


def test_the_app_fedmosaic_submits_is_accepted(tmp_path: Path) -> None:
    pyproject = (write_app(tmp_path) / "pyproject.toml").read_text()

    check_app(_bundle(pyproject))


def test_an_app_naming_another_client_app_is_refused(tmp_path: Path) -> None:
    pyproject = (write_app(tmp_path) / "pyproject.toml").read_text().replace(CLIENT_APP, "evil.module:app")

    with pytest.raises(
        ValueError, match=r"runs only fedmosaic\.experiments\.flower_client:client_app.*evil\.module:app"
    ):
        check_app(_bundle(pyproject))


def test_the_secret_is_32_random_bytes_readable_by_its_owner_only(tmp_path: Path) -> None:
    first, second = make_secret(tmp_path / "a"), make_secret(tmp_path / "b")

    assert len(first.read_bytes()) == 32
    assert first.read_bytes() != second.read_bytes()
    assert first.stat().st_mode & 0o777 == 0o600


class SiteOfOneMessage:
    """A SuperNode's Runtime API holding one task; each object of its message is missing at the first ask."""

    def __init__(self, message: Message, context: Context) -> None:
        self.message = message
        self.context = context
        self.objects = {oid: obj.deflate() for oid, obj in get_all_nested_objects(message).items()}
        self.asks: list[str] = []
        self.confirmed: list[str] = []

    def PullTaskInput(self, request: PullTaskInputRequest) -> PullTaskInputResponse:  # noqa: N802 (Flower's name)
        return PullTaskInputResponse(
            task_id=7, context=context_to_proto(self.context), run=Run(run_id=1), fab=fab_to_proto(Fab("h", b"", {}))
        )

    def PullMessages(self, request: PullAppMessagesRequest) -> PullAppMessagesResponse:  # noqa: N802
        return PullAppMessagesResponse(
            messages_list=[message_to_proto(remove_content_from_message(self.message))],
            message_object_trees=[get_object_tree(self.message)],
        )

    def PullObject(self, request: PullObjectRequest) -> PullObjectResponse:  # noqa: N802
        self.asks.append(request.object_id)
        available = self.asks.count(request.object_id) > 1
        return PullObjectResponse(
            object_found=True,
            object_available=available,
            object_content=self.objects[request.object_id] if available else b"",
        )

    def ConfirmMessageReceived(self, request: ConfirmMessageReceivedRequest) -> ConfirmMessageReceivedResponse:  # noqa: N802
        self.confirmed.append(request.message_object_id)
        return ConfirmMessageReceivedResponse()


def test_a_task_input_is_pulled_whole_once_the_supernode_holds_its_objects() -> None:
    # Prepare
    content = RecordDict({"arrays": ArrayRecord({"w": Array(np.arange(6.0).reshape(2, 3))})})
    metadata = Metadata(1, "", 0, 5, "", "1", 0.0, 60.0, "train")
    message = make_message(metadata, content)
    context = Context(run_id=1, node_id=5, node_config={"partition-id": 0}, state=RecordDict(), run_config={})
    site = SiteOfOneMessage(message, context)

    # Execute
    pulled, pulled_context, fab = pull_task_input(site, retry_s=0.01)

    # Assert
    assert pulled.object_id == message.object_id
    assert pulled.metadata.message_id == get_object_tree(message).object_id
    np.testing.assert_array_equal(pulled.content["arrays"]["w"].numpy(), np.arange(6.0).reshape(2, 3))
    assert pulled_context.node_config == {"partition-id": 0}
    assert fab.hash_str == "h"
    assert sorted(set(site.asks)) == sorted(site.objects)
    assert len(site.asks) == 2 * len(site.objects)
    assert site.confirmed == [get_object_tree(message).object_id]


class SignalledTwice:
    """A wake listener whose SuperNode signals twice; the worker's loop stops at its third wait."""

    def __init__(self, stop: threading.Event) -> None:
        self.stop = stop
        self.waits: list[float] = []

    def wait(self, timeout: float) -> bool:
        self.waits.append(timeout)
        if len(self.waits) == 3:
            self.stop.set()
        return len(self.waits) < 3


def test_a_worker_with_a_wake_asks_for_a_task_when_signalled_and_at_the_fallback_interval() -> None:
    # Prepare
    stop = threading.Event()
    wake = SignalledTwice(stop)
    worker = SiteWorker("127.0.0.1:9", None, lambda message, context: message, wake=wake)  # type: ignore[arg-type]
    tasks = iter([True, False, False, False])
    asks: list[bool] = []
    worker.run_next = lambda: asks.append(next(tasks)) or asks[-1]  # type: ignore[method-assign]

    # Execute
    worker.serve(stop)

    # Assert: a task, then no task three times, each followed by a wait on the wake (never a fixed poll)
    assert asks == [True, False, False, False]
    assert wake.waits == [FALLBACK_POLL_S] * 3


def test_a_task_that_fails_outside_the_client_app_does_not_end_the_worker() -> None:
    # Prepare: the second task fails as Flower's push of a reply can (an expired push session)
    stop = threading.Event()
    wake = SignalledTwice(stop)
    worker = SiteWorker("127.0.0.1:9", None, lambda message, context: message, wake=wake)  # type: ignore[arg-type]
    outcomes = iter([True, RuntimeError("push session expired"), True, False, False, False])
    asks: list[object] = []

    def run_next() -> bool:
        outcome = next(outcomes)
        asks.append(outcome)
        if isinstance(outcome, Exception):
            raise outcome
        return bool(outcome)

    worker.run_next = run_next  # type: ignore[method-assign]

    # Execute
    worker.serve(stop)

    # Assert: the worker went on asking for tasks after the failure
    assert len(asks) == 6
    assert wake.waits == [FALLBACK_POLL_S] * 3
