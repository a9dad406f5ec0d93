"""Build the vertical methods' server logic (active party) and client logic (passive parties)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TypeVar

from fedmosaic.methods.base import Built
from fedmosaic.methods.vertical.baselines import Baseline, Concatenation, LaserVFL, Local
from fedmosaic.methods.vertical.false_vfl import FalseVFLServer
from fedmosaic.methods.vertical.false_vfl_client import FalseVFLClient
from fedmosaic.methods.vertical.fedhssl import FedHSSLServer
from fedmosaic.methods.vertical.fedhssl_client import FedHSSLClient
from fedmosaic.methods.vertical.networks import PartyModel
from fedmosaic.methods.vertical.params import (
    FalseVFLParams,
    FedHSSLParams,
    LaserVFLParams,
    PlugVFLParams,
    SplitVFLParams,
)
from fedmosaic.methods.vertical.split_client import SplitClient
from fedmosaic.methods.vertical.split_server import SplitServer, encoder
from fedmosaic.methods.vertical.task import VerticalTask


def build_false_vfl(task: VerticalTask, params: FalseVFLParams) -> Built:
    """FALSE-VFL: the active party's server logic and a passive party per client."""
    data = task.data

    def party(client: int) -> FalseVFLClient:
        width = data.widths[client + 1]
        build = partial(PartyModel, width, params.hidden, params.latent, data.likelihood, params.variant == "II")
        return FalseVFLClient(client + 1, data.splits, build, params.optimizer_spec())

    return FalseVFLServer(task, params), party


def build_fedhssl(task: VerticalTask, params: FedHSSLParams) -> Built:
    """FedHSSL: the active party's server logic and a passive party per client."""
    return FedHSSLServer(task, params), lambda client: FedHSSLClient(client + 1, task.data.splits, params)


P = TypeVar("P", bound=SplitVFLParams)


def split_builder(baseline: Callable[[P, VerticalTask], Baseline]) -> Callable[[VerticalTask, P], Built]:
    """The builder of a split-network baseline whose parameters are of ``baseline``'s type (the task gives the protocol)."""

    def build(task: VerticalTask, params: P) -> Built:
        data = task.data

        def party(client: int) -> SplitClient:
            width = data.widths[client + 1]
            return SplitClient(client + 1, data.splits, lambda: encoder(width, params), params.optimizer_spec())

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
