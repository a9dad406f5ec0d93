"""The split-network baselines' builders: one server (the active party) and one passive party for all four."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from fedmosaic.methods.base import Built
from fedmosaic.methods.vertical.split.baselines import Baseline, Concatenation, LaserVFL, Local
from fedmosaic.methods.vertical.split.client import SplitClient
from fedmosaic.methods.vertical.split.params import LaserVFLParams, PlugVFLParams, SplitVFLParams
from fedmosaic.methods.vertical.split.server import SplitServer, encoder
from fedmosaic.methods.vertical.task import VerticalTask

P = TypeVar("P", bound=SplitVFLParams)


def split_builder(baseline: Callable[[P, VerticalTask], Baseline]) -> Callable[[VerticalTask, P], Built]:
    """The builder of a split-network baseline whose parameters are of ``baseline``'s type (the task gives the protocol)."""

    def build(task: VerticalTask, params: P) -> Built:
        data = task.data

        def party(client: int) -> SplitClient:
            shape = data.party_shapes[client + 1]
            return SplitClient(
                client + 1, data.splits, lambda: encoder(shape, params, client + 1), params.optimizer_spec()
            )

        return SplitServer(task, params, baseline(params, task)), party

    return build


def _local(params: SplitVFLParams, task: VerticalTask) -> Baseline:
    return Local()


def _vanilla(params: SplitVFLParams, task: VerticalTask) -> Baseline:
    return Concatenation(unaligned=task.fallback)


def _plug(params: PlugVFLParams, task: VerticalTask) -> Baseline:
    dropout = 0.0 if task.paper else params.dropout
    return Concatenation(dropout=dropout, zero_fill_at_test=False, aligned_only=False, unaligned=task.fallback)


def _laser(params: LaserVFLParams, task: VerticalTask) -> Baseline:
    return LaserVFL(shared_masks=params.masks == "batch")


build_local = split_builder(_local)


build_vanilla = split_builder(_vanilla)


build_plug = split_builder(_plug)


build_laser = split_builder(_laser)
