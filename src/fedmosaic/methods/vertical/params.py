"""Validated parameters of the vertical methods."""

from __future__ import annotations

from typing import Annotated, Literal

from annotated_types import Ge, Le
from pydantic import Field

from fedmosaic.limits import MAX_LAYERS, MAX_LR, BatchSize, Epochs, Rounds, Width
from fedmosaic.methods.base import MethodParams
from fedmosaic.methods.vertical.optimizer_state import OptimizerSpec


class VerticalParams(MethodParams):
    """What every vertical method shares.

    Parameters
    ----------
    hidden : int, default 64
        Hidden units of every MLP.
    batch_size : int, default 128
        Rows per training step (one step is one or two exchanges with the parties).
    lr : float, default 0.001
        Adam learning rate of every party.
    patience : int or None, default None
        Stop training after this many validated rounds without a better
        validation accuracy (the round selected on validation is tested
        either way); None trains every round.
    """

    hidden: Width = 64
    batch_size: BatchSize = 128
    lr: float = Field(default=1e-3, gt=0, le=MAX_LR)
    patience: Rounds | None = None

    def optimizer_spec(self) -> OptimizerSpec:
        """Every party's optimizer: Adam with ``lr``."""
        return OptimizerSpec("adam", self.lr)


class FalseVFLParams(VerticalParams):
    """FALSE-VFL's parameters.

    Parameters
    ----------
    latent : int, default 16
        Width of the shared latent ``h``.
    top_latent : int, default 8
        Width of the top latent ``z``.
    kappa : int, default 5
        Importance samples of the bounds in both stages.
    predict_samples : int, default 20
        Importance samples of the self-normalised prediction.
    stage1_rounds : int, default 20
        Rounds (epochs) of stage 1, the unsupervised IWAE; the federation's
        remaining rounds train the classifier (stage 2); must be fewer than
        ``federation.rounds``.
    stage1_passes : int, default 1
        Epochs of stage 1 over the training rows per stage-1 round (stage 1
        makes ``stage1_rounds * stage1_passes`` epochs).
    classifier_passes : int, default 10
        Passes of stage 2 over the labeled rows per round, each on its own
        ``kappa`` fresh samples per row.
    fusion : {"mean", "poe"}, default "mean"
        The paper's mean of means with summed precisions, or the product of experts.
    variant : {"I", "II"}, default "I"
        I ignores the mask (valid under MAR); II adds a mask model ``p(m | x)`` per party (MNAR).
    party_subsets : bool, default False
        Beyond the paper: stage 1 also maximises the bound of a random subset
        of each row's present parties (each kept with probability 1/2, at
        least one), and stage 2 replaces a labeled row by such a subset with
        probability ``subset_rate`` in each round.
    subset_rate : float, default 0.5
        With ``party_subsets``: probability that a labeled row is trained on a random subset of its parties.
    prediction : {"snis", "mean", "ess"}, default "snis"
        How a row's class is predicted (validation and test): the paper's
        self-normalised importance sampling over ``predict_samples`` samples;
        the classifier at the fused posterior mean (beyond the paper); or
        ``ess``, the posterior mean on the rows whose weights are degenerate
        (effective sample size below ``ess_floor``) and SNIS elsewhere.
    ess_floor : float, default 2.0
        With ``prediction = "ess"``: the effective sample size below which a row's weights count as degenerate.
    report_samples : list of int, default []
        Extra SNIS sample counts whose test accuracies are reported
        (``snis<count>_accuracy_<setting>``), beside the rule's accuracy,
        SNIS with ``predict_samples`` (``snis_accuracy_<setting>``), the
        posterior mean's (``mean_accuracy_<setting>``) and the mean effective
        sample size (``snis_ess_<setting>``).
    """

    latent: Width = 16
    top_latent: Width = 8
    kappa: int = Field(default=5, ge=1, le=1000)
    predict_samples: int = Field(default=20, ge=1, le=10_000)
    stage1_rounds: Rounds = 20
    stage1_passes: Epochs = 1
    classifier_passes: Epochs = 10
    fusion: Literal["mean", "poe"] = "mean"
    variant: Literal["I", "II"] = "I"
    party_subsets: bool = False
    subset_rate: float = Field(default=0.5, ge=0, le=1)
    prediction: Literal["snis", "mean", "ess"] = "snis"
    ess_floor: float = Field(default=2.0, ge=1, le=100_000)
    report_samples: list[Annotated[int, Ge(1), Le(100_000)]] = Field(default_factory=list, max_length=16)


class SplitVFLParams(VerticalParams):
    """The split-network baselines' parameters.

    Parameters
    ----------
    embedding : int, default 32
        Width of each party's embedding.
    layers : int, default 1
        Hidden layers of every encoder, and of the heads unless
        ``head_layers`` is set (LASER-VFL's reference: 2 hidden layers of 128
        units, embeddings of 128 and linear heads).
    head_layers : int or None, default None
        Hidden layers of the active party's heads (0: linear, as LASER-VFL's
        reference); None: ``layers``.
    passes : int, default 1
        Epochs over the training rows per round (FedHSSL: per fine-tuning
        round) under the tuned protocol; the paper protocol
        (``vertical.protocol = "paper"``) makes one per round.
    epochs : int or None, default None
        A fixed budget under both protocols: this many epochs in all, spread
        evenly over the rounds the baseline trains (replaces ``passes``).
    test_round : {"best", "last"}, default "best"
        Test the round of the best validation accuracy (when there is a
        validation split), or the last round (a reference configuration's
        fixed budget; no validation).
    optimizer : {"adam", "sgd"}, default "adam"
        Every party's optimizer of the split networks (FedHSSL: of pre-training and fine-tuning).
    momentum : float, default 0.0
        SGD's momentum (``optimizer = "sgd"`` only).
    weight_decay : float, default 0.0
        L2 weight decay of the optimizer.
    """

    embedding: Width = 32
    layers: int = Field(default=1, ge=1, le=MAX_LAYERS)
    head_layers: int | None = Field(default=None, ge=0, le=MAX_LAYERS)
    passes: Epochs = 1
    epochs: Epochs | None = None
    test_round: Literal["best", "last"] = "best"
    optimizer: Literal["adam", "sgd"] = "adam"
    momentum: float = Field(default=0.0, ge=0, lt=1)
    weight_decay: float = Field(default=0.0, ge=0, le=1)

    @property
    def head_depth(self) -> int:
        """Hidden layers of the heads: ``head_layers``, else ``layers``."""
        return self.layers if self.head_layers is None else self.head_layers

    def optimizer_spec(self) -> OptimizerSpec:
        """Every party's optimizer of the split networks."""
        return OptimizerSpec(self.optimizer, self.lr, self.momentum, self.weight_decay)


class PlugVFLParams(SplitVFLParams):
    """PlugVFL's parameters.

    Parameters
    ----------
    dropout : float, default 0.5
        Probability that a passive party's embedding is replaced by zeros in
        a training row, under the tuned protocol (the paper protocol, as the
        LASER-VFL reference code, drops none).
    """

    dropout: float = Field(default=0.5, ge=0, lt=1)


class LaserVFLParams(SplitVFLParams):
    """LASER-VFL's parameters.

    Parameters
    ----------
    masks : {"batch", "row"}, default "batch"
        Draw the party subsets of a step with one random ranking of the
        parties per batch (as the reference code: rows with the same present
        parties share their subsets), or one per row.
    """

    masks: Literal["batch", "row"] = "batch"


class FedHSSLParams(SplitVFLParams):
    """FedHSSL's parameters.

    Parameters
    ----------
    pretrain_rounds : int, default 20
        Rounds (epochs) of self-supervised pre-training (cross-party and local
        SimSiam, then the average of the top layers); the federation's
        remaining rounds fine-tune the split network (Vanilla VFL); must be
        fewer than ``federation.rounds``.
    passes : int, default 2
        Epochs over the fully aligned labeled rows per fine-tuning round; 2
        gives 20 fine-tuning rounds the 40 epochs Vanilla VFL has in 40 rounds.
    noise_std : float, default 0.1
        Standard deviation of the Gaussian noise of the local augmentations.
    mask_rate : float, default 0.2
        Probability that the local augmentations zero a feature of a row.
    pull : float, default 1.0
        Weight of the local step's pull toward the cross-party representations (0: none).
    """

    pretrain_rounds: Rounds = 20
    passes: Epochs = 2
    noise_std: float = Field(default=0.1, ge=0)
    mask_rate: float = Field(default=0.2, ge=0, lt=1)
    pull: float = Field(default=1.0, ge=0)
