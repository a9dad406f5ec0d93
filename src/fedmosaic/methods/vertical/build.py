"""Build the vertical methods' server logic (active party) and client logic (passive parties)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from fedmosaic.methods.base import Built, MethodParams
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


def build_false_vfl(task: VerticalTask, params: MethodParams) -> Built:
    """FALSE-VFL: the active party's server logic and a passive party per client."""
    assert isinstance(params, FalseVFLParams)
    data = task.data

    def party(client: int) -> FalseVFLClient:
        width = data.widths[client + 1]
        build = partial(PartyModel, width, params.hidden, params.latent, data.likelihood, params.variant == "II")
        return FalseVFLClient(client + 1, data.splits, build, params.lr)

    return FalseVFLServer(task, params), party


def build_fedhssl(task: VerticalTask, params: MethodParams) -> Built:
    """FedHSSL: the active party's server logic and a passive party per client."""
    assert isinstance(params, FedHSSLParams)
    return FedHSSLServer(task, params), lambda client: FedHSSLClient(client + 1, task.data.splits, params)


def split_builder(baseline: Callable[[MethodParams], Baseline]) -> Callable[[VerticalTask, MethodParams], Built]:
    """The builder of a split-network baseline."""

    def build(task: VerticalTask, params: MethodParams) -> Built:
        assert isinstance(params, SplitVFLParams)
        data = task.data

        def party(client: int) -> SplitClient:
            width = data.widths[client + 1]
            return SplitClient(client + 1, data.splits, lambda: encoder(width, params), params.lr)

        return SplitServer(task, params, baseline(params)), party

    return build


build_local = split_builder(lambda params: Local())
build_vanilla = split_builder(lambda params: Concatenation())


def _plug(params: MethodParams) -> Baseline:
    assert isinstance(params, PlugVFLParams)
    return Concatenation(dropout=params.dropout, zero_fill_at_test=False, aligned_only=False)


def _laser(params: MethodParams) -> Baseline:
    assert isinstance(params, LaserVFLParams)
    return LaserVFL(shared_masks=params.masks == "batch")


build_plug = split_builder(_plug)
build_laser = split_builder(_laser)
