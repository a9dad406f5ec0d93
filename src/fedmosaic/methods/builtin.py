"""fedmosaic's own methods, registered through its ``fedmosaic.methods`` entry point as a plugin's are.

``pyproject.toml`` names :data:`METHODS` under ``[project.entry-points."fedmosaic.methods"]``;
:data:`fedmosaic.methods.registry.METHODS` loads it first, then every installed plugin's. Each builder is
:class:`~fedmosaic.deferred.Deferred`: listing the methods or validating their parameters imports no
PyTorch, which loads when a run builds a method.
"""

from __future__ import annotations

from dataclasses import replace

from fedmosaic.deferred import Deferred
from fedmosaic.methods.base import Capabilities, Method
from fedmosaic.methods.concepts.params import FCMParams
from fedmosaic.methods.horizontal.decoder_matched.params import DecoderMatchedParams
from fedmosaic.methods.horizontal.fedavg.params import FedAvgParams, FedProxParams
from fedmosaic.methods.horizontal.fedcfa.params import FedCFAParams, FedCFAReferenceParams
from fedmosaic.methods.horizontal.fedmix.params import FedMixParams, NaiveMixParams
from fedmosaic.methods.horizontal.scaffold.params import ScaffoldParams
from fedmosaic.methods.vertical.false_vfl.params import FalseVFLParams
from fedmosaic.methods.vertical.fedhssl.params import FedHSSLParams
from fedmosaic.methods.vertical.split.params import LaserVFLParams, PlugVFLParams, SplitVFLParams

MODEL_UPDATES = Capabilities(client_dp=True, robust_aggregation=True, update_attacks=True, secure_aggregation=True)
"""Clients train the global model and upload it, and nothing else: every runtime feature but DP-SGD applies."""
MODEL_AND_MEANS = Capabilities(robust_aggregation=True, update_attacks=True)
"""The model is aggregated by the rule, but means of the clients' data are shared without noise (no client-level DP)."""

METHODS: tuple[Method, ...] = (
    Method(
        "fedavg",
        "FedAvg: example-weighted average of full models",
        "classification",
        FedAvgParams,
        Deferred("fedmosaic.methods.horizontal.fedavg.build:build_fedavg"),
        replace(MODEL_UPDATES, dp_sgd=True),
    ),
    Method(
        "fedprox",
        "FedProx: FedAvg with a proximal term mu",
        "classification",
        FedProxParams,
        Deferred("fedmosaic.methods.horizontal.fedavg.build:build_fedprox"),
        MODEL_UPDATES,
    ),
    Method(
        "fedavg-decoder-matched",
        "FedAvg with the decoder's step raised to FedCFA's (decoder gradient x 11): the step-size control for FedCFA",
        "classification",
        DecoderMatchedParams,
        Deferred("fedmosaic.methods.horizontal.decoder_matched.build:build_decoder_matched"),
        MODEL_UPDATES,
    ),
    Method(
        "scaffold",
        "SCAFFOLD: local steps corrected by server and client control variates",
        "classification",
        ScaffoldParams,
        Deferred("fedmosaic.methods.horizontal.scaffold.build:build_scaffold"),
        # the control variates bypass the rule and the noise; secure aggregation sums them unweighted
        Capabilities(update_attacks=True, secure_aggregation=True),
    ),
    Method(
        "fedcfa",
        "FedCFA: counterfactual samples from global chunk means and factor decorrelation",
        "classification",
        FedCFAParams,
        Deferred("fedmosaic.methods.horizontal.fedcfa.build:build_fedcfa"),
        replace(MODEL_AND_MEANS, secure_aggregation=True),  # the chunk means stay in the clear
    ),
    Method(
        "fedcfa-reference",
        "FedCFA as the public reference runs it: loss 1:5:5 with signed rules, k 24, no FDC, "
        "last round's chunk means with the remainder, SGD momentum carried across rounds",
        "classification",
        FedCFAReferenceParams,
        Deferred("fedmosaic.methods.horizontal.fedcfa.build:build_fedcfa"),
        replace(MODEL_AND_MEANS, secure_aggregation=True),  # the chunk means stay in the clear
    ),
    Method(
        "fedmix",
        "FedMix: global mixup approximated with shared mean inputs and labels (double backward)",
        "classification",
        FedMixParams,
        Deferred("fedmosaic.methods.horizontal.fedmix.build:build_fedmix"),
        replace(MODEL_AND_MEANS, secure_aggregation=True),  # the shared means stay in the clear
    ),
    Method(
        "naivemix",
        "NaiveMix: local data mixed with other clients' shared means",
        "classification",
        NaiveMixParams,
        Deferred("fedmosaic.methods.horizontal.fedmix.build:build_fedmix"),
        replace(MODEL_AND_MEANS, dp_sgd=True, secure_aggregation=True),  # the shared means stay in the clear
    ),
    Method(
        "fcm",
        "F-CMs: concept-based models that grow with their clients (and static, reinit, full-model variants)",
        "concepts",
        FCMParams,
        Deferred("fedmosaic.methods.concepts.build:build_fcm"),
        replace(MODEL_UPDATES, dp_sgd=True, graph_attacks=True, kept_optimizer=True),
    ),
    Method(
        "false-vfl",
        "FALSE-VFL: latent variable model over any alignment, IWAE pretraining, frozen-generative classifier",
        "vertical",
        FalseVFLParams,
        Deferred("fedmosaic.methods.vertical.false_vfl.build:build_false_vfl"),
    ),
    Method(
        "vfl-local",
        "Local: the active party alone on its labeled rows",
        "vertical",
        SplitVFLParams,
        Deferred("fedmosaic.methods.vertical.split.build:build_local"),
    ),
    Method(
        "vanilla-vfl",
        "Vanilla VFL: split network on fully aligned labeled rows, absent blocks zero-filled at test",
        "vertical",
        SplitVFLParams,
        Deferred("fedmosaic.methods.vertical.split.build:build_vanilla"),
    ),
    Method(
        "plug-vfl",
        "PlugVFL: split network on every labeled row, party-wise dropout, absent parties as zero embeddings",
        "vertical",
        PlugVFLParams,
        Deferred("fedmosaic.methods.vertical.split.build:build_plug"),
    ),
    Method(
        "laser-vfl",
        "LASER-VFL: a head per party over mean embeddings of sampled party subsets",
        "vertical",
        LaserVFLParams,
        Deferred("fedmosaic.methods.vertical.split.build:build_laser"),
    ),
    Method(
        "fedhssl",
        "FedHSSL: cross-party and local SimSiam pre-training, averaged top layers, then Vanilla VFL fine-tuning",
        "vertical",
        FedHSSLParams,
        Deferred("fedmosaic.methods.vertical.fedhssl.build:build_fedhssl"),
    ),
)
"""The built-in methods, in the order ``fedmosaic presets`` lists them."""
