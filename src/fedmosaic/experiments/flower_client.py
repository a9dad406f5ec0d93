"""Flower's ``ClientApp`` for every fedmosaic method.

A node rebuilds its client logic from the header of each message: the
experiment's configuration, the run and the job. It prepares the
experiment's data from its own data folder (the ``data-dir`` node config,
else the folder the simulation was given, else ``FEDMOSAIC_DATA`` or the
cache folder) and keeps only its own partition (its ``partition-id``). With
sites' own tables (``[tables]``) it reads only its own site's table: the
``data-file`` node config (and ``graph-file``, its graph belief), else, in a
simulation, the experiment's file of its partition. A passive party of a vertical task
reads its own table the same way and serves the rows its row alignment
left in its client state; asked after training, it writes its part of the
model under its ``state-dir`` (:mod:`fedmosaic.experiments.model_parts`).
Client state lives in Flower's ``context.state``; what is kept in the
process is a cache of prepared data and of built client logics (keyed by
job, partition and node config), both deterministic: a process that handles
many messages (a warm site, :mod:`fedmosaic.deploy.worker`) rebuilds neither,
and a fresh process builds the same ones.

Deployment reference: ``fedmosaic.experiments.flower_client:client_app``.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from functools import lru_cache
from typing import Any

import numpy as np
from flwr.app import Context
from flwr.app import Message as FlowerMessage
from flwr.clientapp import ClientApp

from fedmosaic.devices import computing_on
from fedmosaic.errors import FedmosaicError
from fedmosaic.experiments.classification import ClassificationWorkload
from fedmosaic.experiments.config import ExperimentConfig, load_config, method_params
from fedmosaic.experiments.inprocess_engine import job_key
from fedmosaic.experiments.model_parts import node_parts_root, run_client
from fedmosaic.experiments.table_cards import scale_entry
from fedmosaic.experiments.table_vertical import ALIGNMENT, node_block, node_data, read_party
from fedmosaic.experiments.table_workload import NODE_FILE, SCALING, TableWorkload, node_workload
from fedmosaic.experiments.vertical_workload import TEST_ROWS, VerticalWorkload
from fedmosaic.experiments.workloads import ConceptWorkload, prepare_workload
from fedmosaic.federation import ClientContext, ClientLogic, ClientState, Message
from fedmosaic.federation.flower.client import handle_flower_message, load_state, site_states
from fedmosaic.federation.flower.site_state import STATE_DIR
from fedmosaic.federation.message import ConfigValue, as_int
from fedmosaic.methods.registry import get_method
from fedmosaic.preparation.alignment import AlignmentClient
from fedmosaic.preparation.scaling import ScalingClient
from fedmosaic.threads import torch_threads

client_app = ClientApp()
LOGIC_CACHE = 16
"""Client logics a process keeps built (most recently used first out last)."""
_LOGICS: dict[str, ClientLogic] = {}


@client_app.train()
def train(message: FlowerMessage, context: Context) -> FlowerMessage:
    """Handle a ``train`` message."""
    return handle_flower_message(message, context, client_logic)


@client_app.evaluate()
def evaluate(message: FlowerMessage, context: Context) -> FlowerMessage:
    """Handle an ``evaluate`` message."""
    return handle_flower_message(message, context, client_logic)


@client_app.query()
def query(message: FlowerMessage, context: Context) -> FlowerMessage:
    """Handle a ``query`` message (the bridge's own, or a method's)."""
    return handle_flower_message(message, context, client_logic)


def client_logic(header: dict[str, ConfigValue], partition: int, context: Context) -> ClientLogic:
    """:func:`build_client_logic`, built once per process for each job, partition and node config."""
    key = json.dumps(
        [{k: v for k, v in header.items() if k not in ("round", "client")}, partition, dict(context.node_config)],
        sort_keys=True,
    )
    logic = _LOGICS.pop(key, None) or build_client_logic(header, partition, context)
    _LOGICS[key] = logic
    while len(_LOGICS) > LOGIC_CACHE:
        _LOGICS.pop(next(iter(_LOGICS)))
    return logic


def build_client_logic(header: dict[str, ConfigValue], partition: int, context: Context) -> ClientLogic:
    """Build the client logic of ``partition`` for the job a message header names.

    Parameters
    ----------
    header : dict
        Written by :meth:`fedmosaic.experiments.engines.JobSpec.header`.
    partition : int
        The node's partition (client id).
    context : flwr.app.Context
        The node's context (its ``data-dir`` node config, if any).
    """
    config = load_config(json.loads(str(header["experiment"])))
    run_index, label = as_int(header["run"]), str(header["label"])
    build = _dataset_client if config.tables is None else NODE_CLIENTS[config.tables.kind]
    return build(config, run_index, label, partition, header, context)


def _dataset_client(
    config: ExperimentConfig,
    run_index: int,
    label: str,
    partition: int,
    header: dict[str, ConfigValue],
    context: Context,
) -> ClientLogic:
    """A client on a registered dataset: the node prepares the experiment's data (from its ``data-dir``) and keeps its partition."""
    node_dir = context.node_config.get("data-dir", header.get("data-dir"))
    data_dir = None if node_dir is None else str(node_dir)
    workload = _workload(str(header["experiment"]), data_dir)
    return _method_client(config, run_index, label, workload, partition, context)


def _site_client(
    config: ExperimentConfig,
    run_index: int,
    label: str,
    partition: int,
    header: dict[str, ConfigValue],
    context: Context,
) -> ClientLogic:
    """A site's client on horizontal or concept tables: it reads only its own site's file (and graph belief)."""
    tables = node_workload(config, partition, context.node_config, header)
    if label == SCALING:
        return ScalingClient(tables.features(partition))
    return _method_client(config, run_index, label, tables, partition, context)


def _party_client(
    config: ExperimentConfig,
    run_index: int,
    label: str,
    partition: int,
    header: dict[str, ConfigValue],
    context: Context,
) -> ClientLogic:
    """A passive party's client on parties' own tables: it reads only its own table (its ``data-file`` node config).

    Its row alignment is the state its alignment job left on this node
    (``context.state``, else the node's ``state-dir``); the test rows come
    with the message.
    """
    tables = config.tables
    assert tables is not None
    party = partition + 1
    ids, x, _ = read_party(tables, party, str(context.node_config.get(NODE_FILE, "")) or None)
    if label == ALIGNMENT:
        return AlignmentClient(ids)
    key = job_key(json.loads(str(header["experiment"])), 0, ALIGNMENT)
    site = site_states(context, header)
    alignment = load_state(context, key, str(context.run_id)) or (
        site.load_before(key, partition, 2) if site is not None else None
    )
    if alignment is None or "rows" not in alignment.arrays:
        raise FedmosaicError(f"passive party {party}: this node holds no row alignment of the experiment")
    test = np.asarray(header[TEST_ROWS], dtype=np.int64)
    block, scale = node_block(x, alignment)
    workload = VerticalWorkload(node_data(tables, party, block, test))
    return _method_client(config, run_index, label, workload, partition, context, {"standardise": scale_entry(scale)})


def _method_client(
    config: ExperimentConfig,
    run_index: int,
    label: str,
    workload: ClassificationWorkload | ConceptWorkload | TableWorkload | VerticalWorkload,
    partition: int,
    context: Context,
    details: dict[str, Any] | None = None,
) -> ClientLogic:
    """The run's client of ``partition``; it writes its part of the model under the node's ``state-dir`` when asked."""
    run = config.runs[run_index]
    jobs = workload.jobs(run.setting, config)
    job = next(j for j in jobs if j.label == label)
    _, factory = get_method(run.method).build(job.task, method_params(config, run_index))
    root = node_parts_root(context.node_config.get(STATE_DIR), config.name)
    secure = run.setting == "federated"
    return _Configured(lambda: run_client(config, factory(partition), root, details or {}, secure=secure), config)


@lru_cache(maxsize=2)
def _workload(experiment: str, data_dir: str | None) -> Any:
    return prepare_workload(load_config(json.loads(experiment)), data_dir=data_dir)


NODE_CLIENTS: dict[str, Callable[..., ClientLogic]] = {
    "horizontal": _site_client,
    "concepts": _site_client,
    "vertical": _party_client,
}
"""``tables.kind`` -> how a node builds its client on its own tables."""


class _Configured(ClientLogic):
    """Builds and runs a client logic with the experiment's PyTorch threads and device, as the in-process engine does.

    The device is resolved on the node (``auto``: its GPU when it has one).
    """

    def __init__(self, build: Callable[[], ClientLogic], config: ExperimentConfig) -> None:
        self._threads = config.federation.threads
        self._device = config.train.device
        with self._settings():
            self._logic = build()

    def handle(self, message: Message, state: ClientState, context: ClientContext) -> Message:
        with self._settings():
            return self._logic.handle(message, state, context)

    @contextlib.contextmanager
    def _settings(self) -> Iterator[None]:
        with torch_threads(self._threads), computing_on(self._device):
            yield
