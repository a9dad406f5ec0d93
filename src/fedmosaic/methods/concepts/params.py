"""Parameters of the F-CMs method and its variants."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from pydantic import Field
from typing_extensions import override

from fedmosaic.limits import MAX_ROUNDS
from fedmosaic.methods.base import MethodParams
from fedmosaic.methods.concepts.model_params import ConceptModelParams


class FCMParams(MethodParams):
    """F-CMs parameters.

    Parameters
    ----------
    model : table, default {}
        The concept model (``family``, ``decoder``, sizes, ``init`` of new
        connections); see the model parameters below.
    growth : {"grow", "static", "reinit"}, default "grow"
        ``grow`` adds or rewires only the affected modules when concepts
        arrive or parents change; ``static`` fixes the architecture to the
        first clients' concepts (later concepts are ignored); ``reinit``
        rebuilds the whole model from scratch at every change.
    aggregation : {"module", "full"}, default "module"
        ``module`` averages each module over the clients that trained it and
        clients upload only those; ``full`` is FedAvg of the whole model with
        no module masking.
    gamma : float, default 0.8
        Weight of the concept losses; the task loss has ``1 - gamma``.
    concept_loss : {"sum", "mean"}, default "sum"
        How a client combines the losses of the concepts it labels: their
        sum (each has weight ``gamma``) or their mean (together they have
        ``gamma``, as in the reference code; the task then keeps a larger
        share of the loss on a client with many concepts).
    intervention_prob : float, default 0.8
        Probability that a labeled concept of a training sample is replaced by
        its true value (training-time interventions).
    patience : int, default 10
        Stop after this many rounds without a lower selection criterion
        (``selection``), counted from the last growth, never before the last
        arrival; 0 disables early stopping.
    selection : {"task", "loss"}, default "task"
        What selects the tested model and drives ``patience``: ``task``, the
        clients' validation task loss, ties broken by the whole validation
        loss; ``loss``, the whole validation loss (concepts included), as in
        the reference code. A model whose task no client labels is always
        selected on the whole loss.
    intervention_noise : float, default 0.8
        Standard deviation of the Gaussian noise added to the test inputs for
        the intervention curves (as in the paper), so that concept
        predictions are imperfect and interventions can correct them.
    graph_epsilon : float or None, default None
        Randomized response on each client's local graph before it leaves
        the client: every concept pair is in one of three states (edge one
        way, the other way, none); the client sends its most believed state
        with probability ``e^eps / (e^eps + 2)`` and each other state with
        probability ``1 / (e^eps + 2)``, as a 0/1 matrix (eps-local DP per
        pair). None sends the confidence matrix itself.
    """

    model: ConceptModelParams = Field(default_factory=ConceptModelParams)
    growth: Literal["grow", "static", "reinit"] = "grow"
    aggregation: Literal["module", "full"] = "module"
    gamma: float = Field(default=0.8, ge=0, le=1)
    concept_loss: Literal["sum", "mean"] = "sum"
    intervention_prob: float = Field(default=0.8, ge=0, le=1)
    patience: int = Field(default=10, ge=0, le=MAX_ROUNDS)
    selection: Literal["task", "loss"] = "task"
    intervention_noise: float = Field(default=0.8, ge=0)
    graph_epsilon: float | None = Field(default=None, gt=0)

    @override
    def check_own_model(self, shapes: Sequence[tuple[int, ...]], num_classes: int) -> None:
        """Build the input encoder of ``model.factory`` or ``model.backbone``, if any, on inputs of ``shapes[0]``'s features."""
        if self.model.factory is not None or self.model.backbone is not None:
            self.model.build_encoder(math.prod(shapes[0]))
