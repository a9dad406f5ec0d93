"""A minimal Flower 1.42 ServerApp/ClientApp running fedmosaic's FedAvg for the parallel-engine benchmark.

The ClientApp trains with fedmosaic's own :class:`FedAvgClient` (the same
local steps as the in-process engines) on the partition of its node; the
ServerApp sends the global model to every node each round and averages the
replies with :func:`weighted_average`. Each Ray actor prepares the workload
once (first message) from the configuration the server sends.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from flwr.app import Array, ArrayRecord, ConfigRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp
from flwr.serverapp import Grid, ServerApp

from fedmosaic.experiments.config import load_config
from fedmosaic.experiments.workloads import prepare_classification
from fedmosaic.federation import ClientContext, ClientState, derive_seed, weighted_average
from fedmosaic.federation import Message as FedMessage
from fedmosaic.methods.arrays import model_to_arrays, seeded
from fedmosaic.methods.horizontal.fedavg.client import FedAvgClient
from fedmosaic.methods.horizontal.models import build_model

_WORKLOADS: dict[str, object] = {}


def _workload(source: str):
    if source not in _WORKLOADS:
        _WORKLOADS[source] = prepare_classification(load_config(json.loads(source)))
    return _WORKLOADS[source]


def _factory(config, data):
    return lambda: build_model(config.model, tuple(data.test.x.shape[1:]), data.test.num_classes)


def _to_record(arrays) -> ArrayRecord:
    return ArrayRecord(array_dict={name: Array(a) for name, a in arrays.items()})


def _from_record(record: ArrayRecord):
    return {name: array.numpy() for name, array in record.items()}


client_app = ClientApp()


@client_app.train()
def train(message: Message, context: Context) -> Message:
    """Train the received model on this node's partition with fedmosaic's FedAvg client."""
    settings = message.content["config"]
    source = str(settings["source"])
    config = load_config(json.loads(source))
    data = _workload(source)
    client = int(context.node_config["partition-id"])
    logic = FedAvgClient(_factory(config, data), data.clients[client], config.train)
    rnd = int(settings["round"])
    reply = logic.handle(
        FedMessage(arrays=_from_record(message.content["arrays"])),
        ClientState(),
        ClientContext(client, rnd, derive_seed(config.seed, rnd, client, "client")),
    )
    content = RecordDict({"arrays": _to_record(reply.arrays), "metrics": MetricRecord(dict(reply.metrics))})
    return Message(content=content, reply_to=message)


def tree_cpu_seconds(root: int) -> float:
    """CPU seconds used so far by ``root`` and every live process below it (Ray's actors included)."""
    parents: dict[int, int] = {}
    used: dict[int, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid = int(stat.parent.name)
        parents[pid] = int(fields[1])
        used[pid] = (int(fields[11]) + int(fields[12])) / tick
    total = 0.0
    for pid, seconds in used.items():
        walk = pid
        while walk not in (0, 1, root) and walk in parents:
            walk = parents[walk]
        if walk == root:
            total += seconds
    return total


def server_app_for(source: str, rounds: int, timings: list[tuple[float, float]]) -> ServerApp:
    """A ServerApp running ``rounds`` FedAvg rounds.

    Appends ``(wall time, CPU seconds of this process tree)`` at each round's
    start and at the end.
    """
    app = ServerApp()
    config = load_config(json.loads(source))

    @app.main()
    def main(grid: Grid, context: Context) -> None:
        data = _workload(source)
        params = model_to_arrays(seeded(derive_seed(config.seed, "init"), _factory(config, data)))
        nodes = sorted(grid.get_node_ids())
        while len(nodes) < config.partition.num_clients:
            time.sleep(0.1)
            nodes = sorted(grid.get_node_ids())
        for rnd in range(1, rounds + 1):
            timings.append((time.perf_counter(), tree_cpu_seconds(os.getpid())))
            messages = [
                Message(
                    content=RecordDict(
                        {"arrays": _to_record(params), "config": ConfigRecord({"round": rnd, "source": source})}
                    ),
                    message_type="train",
                    dst_node_id=node,
                )
                for node in nodes
            ]
            replies = [r for r in grid.send_and_receive(messages) if r.has_content()]
            contributions = [
                (_from_record(r.content["arrays"]), float(r.content["metrics"]["num_examples"])) for r in replies
            ]
            params = weighted_average(contributions)
        timings.append((time.perf_counter(), tree_cpu_seconds(os.getpid())))

    return app
