"""The methods fedmosaic can run, by name, with their validated parameters."""

from __future__ import annotations

import difflib

from pydantic import Field

from fedmosaic.errors import ConfigError
from fedmosaic.methods.base import Built, Method, MethodParams
from fedmosaic.methods.concepts.client import FCMClient
from fedmosaic.methods.concepts.params import FCMParams
from fedmosaic.methods.concepts.server import FCMServer
from fedmosaic.methods.concepts.task import ConceptTask
from fedmosaic.methods.decoder_matched import DecoderMatchedParams, build_decoder_matched
from fedmosaic.methods.fedavg import FedAvgClient, FedAvgServer
from fedmosaic.methods.fedcfa import FedCFAParams, build_fedcfa
from fedmosaic.methods.fedmix import FedMixParams, NaiveMixParams, build_fedmix
from fedmosaic.methods.scaffold import ScaffoldParams, build_scaffold
from fedmosaic.methods.task import HorizontalTask
from fedmosaic.methods.vertical.build import (
    build_false_vfl,
    build_fedhssl,
    build_laser,
    build_local,
    build_plug,
    build_vanilla,
)
from fedmosaic.methods.vertical.params import (
    FalseVFLParams,
    FedHSSLParams,
    LaserVFLParams,
    PlugVFLParams,
    SplitVFLParams,
)


class FedAvgParams(MethodParams):
    """FedAvg takes no parameters beyond the shared training ones."""


class FedProxParams(MethodParams):
    """FedProx parameters.

    Parameters
    ----------
    mu : float, default 0.01
        Weight of the proximal term ``mu / 2 * ||w - w_global||^2`` (> 0).
    """

    mu: float = Field(default=0.01, gt=0)


def _build_fedavg(task: HorizontalTask, params: MethodParams) -> Built:
    factory = task.model_factory()
    mu = params.mu if isinstance(params, FedProxParams) else 0.0
    server = FedAvgServer(factory, task.test, task.pretraining(), task.probes)
    return server, lambda client: FedAvgClient(factory, task.clients[client], task.train, mu=mu)


def _build_fcm(task: ConceptTask, params: MethodParams) -> Built:
    assert isinstance(params, FCMParams)
    server = FCMServer(task, params)
    return server, lambda client: FCMClient(task.clients[client], params, task.train, task.cardinalities)


METHODS: dict[str, Method] = {
    m.name: m
    for m in (
        Method(
            "fedavg",
            "FedAvg: example-weighted average of full models",
            "classification",
            FedAvgParams,
            _build_fedavg,
            dp_sgd=True,
        ),
        Method(
            "fedprox",
            "FedProx: FedAvg with a proximal term mu",
            "classification",
            FedProxParams,
            _build_fedavg,
        ),
        Method(
            "fedavg-decoder-matched",
            "FedAvg with the decoder's step raised to FedCFA's (decoder gradient x 11): the step-size control for FedCFA",
            "classification",
            DecoderMatchedParams,
            build_decoder_matched,
        ),
        Method(
            "scaffold",
            "SCAFFOLD: local steps corrected by server and client control variates",
            "classification",
            ScaffoldParams,
            build_scaffold,
        ),
        Method(
            "fedcfa",
            "FedCFA: counterfactual samples from global chunk means and factor decorrelation",
            "classification",
            FedCFAParams,
            build_fedcfa,
        ),
        Method(
            "fedmix",
            "FedMix: global mixup approximated with shared mean inputs and labels (double backward)",
            "classification",
            FedMixParams,
            build_fedmix,
        ),
        Method(
            "naivemix",
            "NaiveMix: local data mixed with other clients' shared means",
            "classification",
            NaiveMixParams,
            build_fedmix,
            dp_sgd=True,
        ),
        Method(
            "fcm",
            "F-CMs: concept-based models that grow with their clients (and static, reinit, full-model variants)",
            "concepts",
            FCMParams,
            _build_fcm,
            dp_sgd=True,
        ),
        Method(
            "false-vfl",
            "FALSE-VFL: latent variable model over any alignment, IWAE pretraining, frozen-generative classifier",
            "vertical",
            FalseVFLParams,
            build_false_vfl,
        ),
        Method(
            "vfl-local", "Local: the active party alone on its labeled rows", "vertical", SplitVFLParams, build_local
        ),
        Method(
            "vanilla-vfl",
            "Vanilla VFL: split network on fully aligned labeled rows, absent blocks zero-filled at test",
            "vertical",
            SplitVFLParams,
            build_vanilla,
        ),
        Method(
            "plug-vfl",
            "PlugVFL: split network on every labeled row, party-wise dropout, absent parties as zero embeddings",
            "vertical",
            PlugVFLParams,
            build_plug,
        ),
        Method(
            "laser-vfl",
            "LASER-VFL: a head per party over mean embeddings of sampled party subsets",
            "vertical",
            LaserVFLParams,
            build_laser,
        ),
        Method(
            "fedhssl",
            "FedHSSL: cross-party and local SimSiam pre-training, averaged top layers, then Vanilla VFL fine-tuning",
            "vertical",
            FedHSSLParams,
            build_fedhssl,
        ),
    )
}


def get_method(name: str, *, field: str = "method") -> Method:
    """The method registered as ``name``.

    Raises
    ------
    ConfigError
        Naming ``field`` and the accepted names (with a did-you-mean).

    Examples
    --------
    >>> get_method("fedavg").summary
    'FedAvg: example-weighted average of full models'
    """
    if name in METHODS:
        return METHODS[name]
    close = difflib.get_close_matches(name, METHODS, n=1)
    hint = f"; did you mean '{close[0]}'?" if close else ""
    raise ConfigError(field, f"unknown method '{name}'{hint} (accepted: {', '.join(sorted(METHODS))})")
