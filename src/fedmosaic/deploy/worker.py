r"""A warm site: one long-lived process runs every message of its SuperNode.

By default a Flower 1.42 SuperNode (``--isolation subprocess``) starts a
SuperExec that launches a fresh ``flwr-clientapp`` process per message,
which imports PyTorch and rebuilds the client's data and model each time.
With ``--isolation process`` the SuperNode starts no executor and waits for
one to take its tasks through its Runtime API (HTTP on 127.0.0.1). This
module is that executor, for fedmosaic's ``ClientApp`` only: it acquires a
task, pulls its message and the node's context, runs the ``ClientApp`` in
this process (PyTorch imported once, the site's data and built clients
cached), pushes the reply and the context, and waits for the next task:
started with ``--wake-name`` (as :class:`fedmosaic.deploy.processes.LocalDeployment`
starts it), it sleeps until fedmosaic's SuperNode launcher signals a stored
message (:mod:`fedmosaic.deploy.wake`), asking at least every 2 s;
otherwise it asks every 0.2 s.

It speaks Flower's own Runtime API with Flower's own client functions, so
Flower stays the transport, the authentication and the TLS layer between
the site and the SuperLink. The security boundary: the worker listens on
nothing; it connects to its SuperNode's Runtime API on the same machine,
and task acquisition is authenticated with the SuperNode's SuperExec
secret (``--superexec-auth-secret-file``, HMAC), so no other local process
can take the site's tasks. It runs only the ``ClientApp`` installed with
fedmosaic, never code from the submitted app bundle (a bundle naming
another ``ClientApp`` is answered with an error), and it exits when its
SuperNode does (``--parent-pid``).

Usage::

    flower-supernode ... --isolation process --superexec-auth-secret-file SECRET --port 9094 &
    python -m fedmosaic.deploy.worker --runtime-api-address 127.0.0.1:9094 \\
        --superexec-auth-secret-file SECRET --parent-pid $! [--wake-name NAME]
"""

from __future__ import annotations

import argparse
import logging
import threading
import time
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path

from flwr.app import Context, Message
from flwr.app.error import Error
from flwr.common.config import get_fab_config
from flwr.common.constant import HEARTBEAT_DEFAULT_INTERVAL, ErrorCode, SubStatus
from flwr.common.serde import context_from_proto, fab_from_proto
from flwr.proto.node_pb2 import Node  # ty: ignore
from flwr.proto.runtime_pb2 import (  # ty: ignore
    AcquireTaskRequest,
    PullAppMessagesRequest,
    PullTaskInputRequest,
    SendTaskHeartbeatRequest,
)
from flwr.supercore.app_utils import start_parent_process_monitor
from flwr.supercore.auth.superexec_secret import load_superexec_auth_secret
from flwr.supercore.constant import TaskType
from flwr.supercore.fab import Fab
from flwr.supercore.inflatable.inflatable_protobuf_utils import (
    make_confirm_message_received_fn_protobuf,
    make_pull_object_fn_protobuf,
)
from flwr.supercore.inflatable.inflatable_utils import pull_and_inflate_object_from_tree
from flwr.supercore.interceptors import (
    RuntimeTokenHttpInterceptor,
    RuntimeVersionHttpInterceptor,
    SuperExecAuthHttpInterceptor,
)
from flwr.supercore.protobuf.client import ProtobufClientInterceptor
from flwr.supercore.retry import make_simple_http_retry_invoker
from flwr.supercore.runtime import RuntimeHttpClient
from flwr.supercore.task_identity import TaskIdentity
from flwr.supernode.runtime.run_clientapp import push_message, push_task_output

from fedmosaic.deploy.wake import FALLBACK_POLL_S, WakeListener

CLIENT_APP = "fedmosaic.experiments.flower_client:client_app"
"""The only ``ClientApp`` a worker runs (the app bundle must name it)."""
POLL_S = 0.2
"""Seconds between two asks for a task when none is waiting and no SuperNode signals (as often as a capped SuperNode
polls its SuperLink)."""
PULL_RETRY_S = 0.05
"""First wait before asking again for a message object the SuperNode does not hold yet (Flower's: 1 s)."""

log = logging.getLogger("fedmosaic.worker")

ClientAppCall = Callable[[Message, Context], Message]


class SiteWorker:
    """Takes the ClientApp tasks of one SuperNode and runs them in this process.

    Parameters
    ----------
    runtime_api_address : str
        ``host:port`` of the SuperNode's Runtime API.
    secret : bytes or None
        The SuperNode's SuperExec secret (authenticates task acquisition).
    client_app : callable (Message, Context) -> Message
        What runs a message (fedmosaic's ``ClientApp``).
    poll_s : float, default POLL_S
        Seconds between two asks for a task without ``wake``.
    wake : WakeListener or None, default None
        Where the SuperNode signals a stored message; with it the worker asks
        when signalled, and at least every :data:`FALLBACK_POLL_S` seconds.
    """

    def __init__(
        self,
        runtime_api_address: str,
        secret: bytes | None,
        client_app: ClientAppCall,
        *,
        poll_s: float = POLL_S,
        wake: WakeListener | None = None,
    ) -> None:
        self._address = runtime_api_address
        self._client_app = client_app
        self._poll_s = poll_s
        self._wake = wake
        interceptors: list[ProtobufClientInterceptor] = [RuntimeVersionHttpInterceptor(component_name="SuperExec")]
        if secret is not None:
            interceptors.append(
                SuperExecAuthHttpInterceptor(
                    master_secret=secret, protected_methods={"/flwr.proto.Runtime/AcquireTask"}
                )
            )
        self._tasks = RuntimeHttpClient.from_server_address(
            server_address=runtime_api_address,
            insecure=True,
            root_certificates=None,
            interceptors=interceptors,
            retry_invoker=make_simple_http_retry_invoker(),
        )

    def serve(self, stop: threading.Event | None = None) -> None:
        """Run tasks as they come, until ``stop`` is set (or forever).

        A task that fails outside the ClientApp (Flower refusing its reply, say, when the push
        session of a run has expired) is logged and left failed; the worker goes on serving, so
        the node answers the next messages rather than going silent until it is restarted.
        """
        stop = stop or threading.Event()
        while not stop.is_set():
            try:
                ran = self.run_next()
            except Exception:
                log.exception("a task failed outside the ClientApp; serving the next one")
                ran = True
            if ran:
                continue
            if self._wake is None:
                stop.wait(self._poll_s)
            else:
                self._wake.wait(FALLBACK_POLL_S)

    def run_next(self) -> bool:
        """Run the next waiting task, if any; return whether there was one."""
        acquired = self._tasks.AcquireTask(AcquireTaskRequest(supported_task_types=[TaskType.CLIENT_APP]))
        if not (acquired.HasField("task") and acquired.token):
            return False
        self._run_task(acquired.token)
        return True

    def _run_task(self, token: str) -> None:
        client = RuntimeHttpClient.from_server_address(
            server_address=self._address,
            insecure=True,
            root_certificates=None,
            interceptors=[
                RuntimeVersionHttpInterceptor(component_name="flwr-clientapp"),
                RuntimeTokenHttpInterceptor(token),
            ],
            retry_invoker=make_simple_http_retry_invoker(),
        )
        beating = threading.Event()
        heart = threading.Thread(target=_heartbeat, args=(client, beating), daemon=True)
        heart.start()
        message: Message | None = None
        context: Context | None = None
        reply: Message | None = None
        status, details = SubStatus.FAILED, "ClientApp task failed"
        times = [time.perf_counter()]
        try:
            message, context, fab = pull_task_input(client, PULL_RETRY_S)
            check_app(fab.content)
            times.append(time.perf_counter())
            reply = self._client_app(message, context)
            times.append(time.perf_counter())
            status, details = SubStatus.COMPLETED, ""
        except Exception as error:
            log.exception("the ClientApp raised an exception")
            details = f"{type(error)}:<'{error}'>"
            if message is not None:
                reply = Message(Error(code=ErrorCode.CLIENT_APP_RAISED_EXCEPTION, reason=details), reply_to=message)
        finally:
            beating.set()
            heart.join()
            try:
                if reply is not None and context is not None:
                    push_message(client, reply, context)
            except Exception as error:
                status, details = SubStatus.FAILED, f"the reply could not be pushed: {type(error).__name__}"
                raise
            finally:
                push_task_output(client=client, context=context, sub_status=status, details=details)
                client.close()
                times.append(time.perf_counter())
                log.info(
                    "task %s: %s s (pull, run, push)", status, " ".join(f"{b - a:.3f}" for a, b in pairwise(times))
                )


def pull_task_input(client: RuntimeHttpClient, retry_s: float) -> tuple[Message, Context, Fab]:
    """A task's message, the node's context and the app bundle, as Flower's own ``pull_task_input`` pulls them.

    Flower's function (``flwr.supernode.runtime.run_clientapp``) waits 1 s,
    then 2 s, 4 s... before asking again for an object of the message that
    the SuperNode does not hold yet. A warm worker takes a task as soon as
    the SuperNode creates it, which is before the SuperNode has fetched the
    message's objects from the SuperLink, so it nearly always met that wait;
    here the first wait is ``retry_s`` (then doubling, as Flower's).
    """
    task = client.PullTaskInput(PullTaskInputRequest())
    TaskIdentity.task_id = task.task_id
    TaskIdentity.run_id = task.run.run_id
    TaskIdentity.node_id = task.context.node_id
    context = context_from_proto(task.context)
    pulled = client.PullMessages(PullAppMessagesRequest())
    if not pulled.messages_list:
        raise RuntimeError("No messages received from Runtime API")
    node = Node(node_id=context.node_id)
    tree = pulled.message_object_trees[0]
    message = pull_and_inflate_object_from_tree(
        tree,
        make_pull_object_fn_protobuf(client.PullObject, node, context.run_id),
        make_confirm_message_received_fn_protobuf(client.ConfirmMessageReceived, node, context.run_id),
        return_type=Message,
        initial_backoff=retry_s,
    )
    message.metadata.__dict__["_message_id"] = tree.object_id  # as Flower's: the inflated message lacks its own id
    return message, context, fab_from_proto(task.fab)


def check_app(fab: bytes) -> None:
    """Refuse an app bundle whose ``ClientApp`` is not fedmosaic's.

    Raises
    ------
    ValueError
        Naming the ``ClientApp`` the bundle asks for.
    """
    named = get_fab_config(fab).get("tool", {}).get("flwr", {}).get("app", {}).get("components", {}).get("clientapp")
    if named != CLIENT_APP:
        raise ValueError(f"this site runs only {CLIENT_APP}; the app asks for {named!r}")


def _heartbeat(client: RuntimeHttpClient, done: threading.Event) -> None:
    """Tell the SuperNode the task is alive until ``done`` (failures are Flower's to handle: it expires the task)."""
    while not done.wait(HEARTBEAT_DEFAULT_INTERVAL / 3):
        try:
            client.SendTaskHeartbeat(SendTaskHeartbeatRequest())
        except Exception:
            log.warning("a task heartbeat failed", exc_info=True)


def main(argv: list[str] | None = None) -> None:
    """Command line: ``python -m fedmosaic.deploy.worker --runtime-api-address HOST:PORT ...``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runtime-api-address", required=True, help="the SuperNode's Runtime API (host:port)")
    parser.add_argument("--superexec-auth-secret-file", type=Path, default=None, help="the SuperNode's secret")
    parser.add_argument("--parent-pid", type=int, default=None, help="exit when this process (the SuperNode) does")
    parser.add_argument("--wake-name", default=None, help="the socket name the SuperNode launcher signals tasks on")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per Runtime API call otherwise
    if args.parent_pid is not None:
        start_parent_process_monitor(args.parent_pid)
    secret = load_superexec_auth_secret(
        None if args.superexec_auth_secret_file is None else str(args.superexec_auth_secret_file)
    )

    from fedmosaic.experiments.flower_client import client_app  # imported once: PyTorch and fedmosaic stay warm

    wake = None
    if args.wake_name is not None:
        try:
            wake = WakeListener(args.wake_name)
        except OSError as error:  # no abstract Unix sockets (not Linux): ask every POLL_S instead
            log.warning("cannot listen for the node's signal (%s); asking for tasks every %s s", error, POLL_S)
    worker = SiteWorker(
        args.runtime_api_address, secret, lambda message, context: client_app(message, context), wake=wake
    )
    log.info("serving the ClientApp tasks of %s", args.runtime_api_address)
    try:
        worker.serve()
    except KeyboardInterrupt:  # the parent monitor's signal: the SuperNode is gone
        log.info("the SuperNode stopped; exiting")


if __name__ == "__main__":
    main()
