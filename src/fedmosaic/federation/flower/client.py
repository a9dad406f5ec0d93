"""The client side of the bridge: one Flower message in, one reply out.

On a Flower deployment every message may be handled in a fresh process, so
nothing is kept in module globals: the client's :class:`ClientState` lives in
Flower's ``context.state`` (one pair of records per job, marked with the
Flower run that wrote them), and the caller's ``logic_for`` gives the client
logic for each message. A node with a ``state-dir`` node config also keeps
each state on its disk (:mod:`fedmosaic.federation.flower.site_state`; on
Flower's simulation, the folder the header names), and a
run that finds no state of its own in ``context.state`` (a restarted
SuperNode, a resumed run) continues from there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import cast

import numpy as np
from flwr.app import Array, ArrayRecord, ConfigRecord, Context
from flwr.app import Message as FlowerMessage

from fedmosaic.errors import FedmosaicError
from fedmosaic.federation.flower.grid import PARTITION, PARTITION_QUERY
from fedmosaic.federation.flower.records import from_record_dict, to_record_dict
from fedmosaic.federation.flower.site_state import STATE_DIR, SiteStates
from fedmosaic.federation.logic import ClientContext, ClientLogic
from fedmosaic.federation.message import ConfigValue, Message, as_int
from fedmosaic.federation.state import ClientState
from fedmosaic.seeding import derive_seed

RUN = "fedmosaic.flower-run"
"""Config entry of a state in ``context.state``: the Flower run that wrote it."""

LogicFactory = Callable[[dict[str, ConfigValue], int, Context], ClientLogic]
"""Builds the client logic of partition ``p`` for a message's header, on a node with a Flower context."""


def partition_of(context: Context) -> int:
    """The partition this node serves, from its ``partition-id`` node config.

    Raises
    ------
    FedmosaicError
        If the node was started without ``partition-id``.
    """
    if "partition-id" not in context.node_config:
        raise FedmosaicError('this node has no "partition-id" in its node config (--node-config "partition-id=N")')
    return int(context.node_config["partition-id"])


def handle_flower_message(message: FlowerMessage, context: Context, logic_for: LogicFactory) -> FlowerMessage:
    """Run the client logic a Flower message is for and return the Flower reply.

    Parameters
    ----------
    message : flwr.app.Message
        Written by :class:`~fedmosaic.federation.flower.grid.FlowerGrid`.
    context : flwr.app.Context
        The node's context; its ``state`` holds the client state between messages.
    logic_for : callable (header, partition, context) -> ClientLogic
        Builds the client logic for the message's job.

    Returns
    -------
    flwr.app.Message
        The reply. Exceptions propagate: Flower turns them into error replies,
        which the server counts as dropouts.
    """
    received, header = from_record_dict(message.content)
    partition = partition_of(context)
    if received.kind == PARTITION_QUERY:
        reply = Message(kind=PARTITION_QUERY, config={PARTITION: partition})
        return FlowerMessage(to_record_dict(reply), reply_to=message)
    if as_int(header["client"]) != partition:
        raise FedmosaicError(f"message for client {header['client']} reached the node of partition {partition}")
    rnd = as_int(header["round"])
    key = str(header["job"])
    run = str(context.run_id)
    site = site_states(context, header)
    state = load_state(context, key, run)
    if state is None:  # this run's first message here: continue from the site's disk, if it keeps states
        state = (site.load_before(key, partition, rnd) if site is not None else None) or ClientState()
    logic = logic_for(header, partition, context)
    client_context = ClientContext(partition, rnd, derive_seed(as_int(header["seed"]), rnd, partition, "client"))
    reply = logic.handle(received.read_only(), state, client_context)
    save_state(context, key, run, state)
    if site is not None:
        site.save(key, partition, rnd, state)
    return FlowerMessage(to_record_dict(reply), reply_to=message)


def site_states(context: Context, header: Mapping[str, ConfigValue]) -> SiteStates | None:
    """The client states the node keeps on its disk, if it keeps them.

    In its ``state-dir`` node config, else in the message header's
    ``state-dir`` (Flower's simulation, whose virtual nodes have no node
    config of their own and share the machine).
    """
    folder = context.node_config.get(STATE_DIR) or header.get(STATE_DIR)
    return None if folder in (None, "") else SiteStates(Path(str(folder)))


def load_state(context: Context, key: str, run: str) -> ClientState | None:
    """The client state of job ``key`` that Flower run ``run`` left in ``context.state`` (``None`` if none)."""
    config = context.state.config_records.get(f"{key}/config")
    if config is None or config.get(RUN) != run:
        return None
    arrays = context.state.array_records.get(f"{key}/arrays")
    return ClientState(
        arrays={name: array.numpy() for name, array in (arrays or {}).items()},
        # written by save_state from a ClientState: its values are ConfigValues
        config=cast("dict[str, ConfigValue]", {name: value for name, value in config.items() if name != RUN}),
    )


def save_state(context: Context, key: str, run: str, state: ClientState) -> None:
    """Store ``state`` in ``context.state`` under job ``key``, marked as Flower run ``run``'s."""
    context.state[f"{key}/arrays"] = ArrayRecord({n: Array(np.asarray(a)) for n, a in state.arrays.items()})
    context.state[f"{key}/config"] = ConfigRecord({**state.config, RUN: run})
