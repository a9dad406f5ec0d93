"""FALSE-VFL's parameters."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Literal

from annotated_types import Ge, Le
from pydantic import Field
from typing_extensions import override

from fedmosaic.limits import Epochs, Rounds, Width
from fedmosaic.methods.architectures import OwnModel
from fedmosaic.methods.vertical.params import VerticalParams


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
    model : table or None, default None
        Every party's own encoder network instead of the perceptron's first
        layer: ``{factory = "module:callable", args = {...}}``, called as
        ``callable(input_shape=shape, output_dim=hidden, party=k, **args)``
        for party ``k`` (0 is the active party) whose examples have ``shape``
        (an image patch's ``(1, rows, cols)``, or ``(columns,)``); it returns
        a ``torch.nn.Module`` of ``(batch, hidden)`` features, which ReLU and
        a linear layer take to the posterior's mean and log-variance. The
        decoders stay perceptrons.
    head : table or None, default None
        The active party's own classifier instead of the perceptron:
        ``{factory = "module:callable", args = {...}}``, called as
        ``callable(input_shape=(latent,), output_dim=classes, **args)``; it
        returns a ``torch.nn.Module`` from a batch of latents to the classes'
        logits (applied to every importance sample's rows).
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
    model: OwnModel | None = None
    head: OwnModel | None = None

    @override
    def check_own_model(self, shapes: Sequence[tuple[int, ...]], num_classes: int) -> None:
        """Build every party's own encoder network (``model.factory``) on examples of its ``shapes[k]``, and the own ``head``, if any."""
        if self.model is not None:
            for party, shape in enumerate(shapes):
                self.model.build(shape, self.hidden, party=party)
        if self.head is not None:
            self.head.build((self.latent,), num_classes)
