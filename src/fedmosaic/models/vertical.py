"""Loaded vertical models: every party's networks, joined again to predict from whatever parties a row has.

Inputs are every party's columns side by side, NaN in all of a party's
columns where it does not hold the row (:class:`VerticalModel`).

FALSE-VFL (:class:`FalseVFLModel`): the parts come from the model folder: ``party-0`` (the active party's
encoder, decoder, top layer and classifier) and ``party-k`` (passive party
``k``'s encoder and decoder, which that party keeps). Prediction follows the
run's protocol step for step, with each party's networks applied where the
run applied them: posteriors of the present parties fused into
``q(h | x_obs)``, ``samples`` draws of ``h``, each party's log-likelihood of
its block, self-normalised importance weights, ``p(y | x_obs) = sum_l w_l
p_phi(y | h_l)`` (or the run's other prediction rule, ``FalseVFLParams.prediction``). With the seed of a test setting (``card["sampling"]``) it
reproduces the run's predictions of that setting exactly.

The split-network methods (:class:`SplitVFLModel`: Local, Vanilla VFL,
PlugVFL, LASER-VFL, and FedHSSL's fine-tuned Vanilla VFL): ``party-0`` holds
the active party's encoder and head, ``party-k`` passive party ``k``'s
encoder (Local has none). Each present party embeds its block, absent ones
are handled as the method's test time handles them (the baseline's own
code: zero-filled blocks for Vanilla VFL and FedHSSL, zero embeddings for
PlugVFL, the mean over the present parties for LASER-VFL, the majority
training class where Local lacks the active party), and the probabilities
are the head's softmax (LASER-VFL: the present parties' heads' softmax,
averaged). The paper protocol's aligned-only scoring (a random or the
majority class on test rows not every party holds) belongs to the run's
evaluation, not to the model: a loaded model predicts every row with its
networks.
"""

from __future__ import annotations

import json
from functools import partial
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from fedmosaic.methods.vertical.false_vfl.active import ActiveModel, party_model
from fedmosaic.methods.vertical.false_vfl.bounds import effective_sample_size
from fedmosaic.methods.vertical.false_vfl.fusion import fuse_posteriors
from fedmosaic.methods.vertical.false_vfl.params import FalseVFLParams
from fedmosaic.methods.vertical.false_vfl.prediction import predictive_probabilities, rule_probabilities
from fedmosaic.methods.vertical.split.baselines import Votes, baseline_from_spec, probabilities
from fedmosaic.methods.vertical.split.params import SplitVFLParams
from fedmosaic.methods.vertical.split.server import active_model, encoder, filled_at_test, stack_embeddings
from fedmosaic.methods.vertical.tensors import heard, spread
from fedmosaic.models.card import ModelFileError
from fedmosaic.models.files import read_part
from fedmosaic.models.loaded import LoadedModel, Prediction
from fedmosaic.models.weights import loaded_network


class VerticalModel(LoadedModel):
    """A vertical model: inputs are every party's columns side by side (``architecture.widths``), NaN where a party lacks the row."""

    def __init__(self, folder: Path, card: dict[str, Any]) -> None:
        super().__init__(folder, card)
        architecture = card["architecture"]
        self.widths = [int(w) for w in architecture["widths"]]
        self.shapes = [tuple(int(d) for d in shape) for shape in architecture.get("shapes", [[w] for w in self.widths])]

    def _blocks(self, x: np.ndarray) -> tuple[list[Tensor], Tensor]:
        """Each party's block (zeros where absent) and the ``(n, K)`` presence."""
        bounds = np.cumsum([0, *self.widths])
        blocks, present = [], []
        for k, (start, stop) in enumerate(pairwise(bounds)):
            block = x[:, start:stop]
            missing = np.isnan(block)
            partial = missing.any(1) & ~missing.all(1)
            if partial.any():
                raise ModelFileError(
                    f"inputs: row {int(np.argmax(partial))}: party {k}'s columns are partly NaN (all NaN: the party lacks the row)"
                )
            blocks.append(torch.from_numpy(np.nan_to_num(block)))
            present.append(~missing.all(1))
        presence = np.stack(present, axis=1)
        if not presence.any(1).all():
            raise ModelFileError(f"inputs: row {int(np.argmin(presence.any(1)))} has no party's columns (all NaN)")
        return blocks, torch.from_numpy(presence)


class FalseVFLModel(VerticalModel):
    """FALSE-VFL's parties joined."""

    def __init__(self, folder: Path, card: dict[str, Any]) -> None:
        super().__init__(folder, card)
        architecture = card["architecture"]
        self.params = FalseVFLParams.model_validate_json(json.dumps(architecture["params"]))
        shapes, likelihood = self.shapes, architecture["likelihood"]
        params = self.params
        self.active = loaded_network(
            lambda: ActiveModel(shapes[0], int(architecture["num_classes"]), params, likelihood),
            *read_part(folder, card, "party-0"),
        )
        self.passive = [
            loaded_network(partial(party_model, shape, params, likelihood, k), *read_part(folder, card, f"party-{k}"))
            for k, shape in enumerate(shapes[1:], start=1)
        ]
        for network in (self.active, *self.passive):
            network.eval()

    @property
    def settings(self) -> dict[str, int]:
        """The seed each test setting of the run drew its prediction samples from."""
        return {name: int(seed) for name, seed in self.card["sampling"]["seeds"].items()}

    @torch.no_grad()
    def predict(self, inputs: Any, *, seed: int | None = None) -> Prediction:
        """Class probabilities from the parties each row has.

        Parameters
        ----------
        inputs : numpy.ndarray or pandas.DataFrame
            Every party's columns in the card's order; a party that does not
            hold a row has NaN in all its columns there.
        seed : int or None, default None
            Seeds the Monte Carlo samples; default: the first test setting's
            (:attr:`settings`).

        Raises
        ------
        ModelFileError
            If a row has a party's columns partly NaN, or no party at all.
        """
        x = self._checked(inputs)
        blocks, present = self._blocks(x)
        generator = torch.Generator().manual_seed(next(iter(self.settings.values())) if seed is None else seed)
        mean, logvar = self._posterior(blocks, present)
        h = mean + torch.exp(0.5 * logvar) * torch.randn(
            (self.params.predict_samples, *mean.shape), generator=generator
        )
        loglik = self.active.party.log_likelihood(blocks[0], present[:, 0], h)
        for k, party in enumerate(self.passive, start=1):
            rows = (
                torch.arange(len(x))
                if self.params.variant == "II"
                else torch.from_numpy(np.flatnonzero(present[:, k].numpy()))
            )
            loglik = loglik.index_add(1, rows, party.log_likelihood(blocks[k][rows], present[rows, k], h[:, rows]))
        log_weights = self.active.log_weights(h, mean, logvar, loglik, self.active.top_noise(h, generator))
        snis = predictive_probabilities(log_weights, torch.softmax(self.active.classifier(h), -1))
        at_mean = torch.softmax(self.active.classifier(mean), -1)
        ess = effective_sample_size(log_weights)
        probabilities = rule_probabilities(self.params.prediction, snis, at_mean, ess, self.params.ess_floor)
        return Prediction(
            probabilities.numpy(),
            torch.log(probabilities).numpy(),
            columns={"class": [f"class={c}" for c in self.classes]},
        )

    def _posterior(self, blocks: list[Tensor], present: Tensor) -> tuple[Tensor, Tensor]:
        """``q(h | x_obs)``: the present parties' posteriors fused as in training."""
        posteriors = [
            party.encoder(blocks[k][present[:, k]]) for k, party in enumerate([self.active.party, *self.passive])
        ]
        fused = present.clone()
        means = torch.stack([spread(m, fused[:, k]) for k, (m, _) in enumerate(posteriors)], dim=1)
        logvars = torch.stack([spread(lv, fused[:, k]) for k, (_, lv) in enumerate(posteriors)], dim=1)
        return fuse_posteriors(means, logvars, fused, self.params.fusion)


class SplitVFLModel(VerticalModel):
    """A split-network model: every party's encoder and the active party's head (see the module docstring)."""

    def __init__(self, folder: Path, card: dict[str, Any]) -> None:
        super().__init__(folder, card)
        architecture = card["architecture"]
        params = SplitVFLParams.model_validate(
            {
                key: architecture[key]
                for key in ("hidden", "embedding", "layers", "head_layers", "model")
                if key in architecture
            }
        )
        self.baseline = baseline_from_spec(architecture["baseline"])
        self.fallback = int(architecture["fallback"])
        self.active = loaded_network(
            lambda: active_model(
                self.shapes[0], len(self.widths), int(architecture["num_classes"]), params, self.baseline
            ),
            *read_part(folder, card, "party-0"),
        )
        takes_part = len(card["parts"]) > 1  # Local: the active party alone
        self.passive = [
            loaded_network(partial(encoder, shape, params, k), *read_part(folder, card, f"party-{k}"))
            for k, shape in enumerate(self.shapes[1:], start=1)
            if takes_part
        ]
        for part in (self.active, *self.passive):
            part.eval()

    @torch.no_grad()
    def votes(self, inputs: Any) -> Votes:
        """The heads' votes for each row of ``inputs``, as the run's test time casts them (their accuracy is the run's)."""
        blocks, present = self._blocks(self._checked(inputs))
        present = heard(present, range(len(self.passive)))
        filled = filled_at_test(self.baseline, present)
        encoders: list[nn.Module] = [self.active["encoder"], *self.passive]
        embeddings = [network(blocks[k][filled[:, k]]) for k, network in enumerate(encoders)]
        stacked = stack_embeddings(embeddings + [None] * (len(self.widths) - len(encoders)), filled)
        return self.baseline.votes(self.active["head"], stacked, present, self.fallback)

    def predict(self, inputs: Any) -> Prediction:
        """Class probabilities from the parties each row has.

        Parameters
        ----------
        inputs : numpy.ndarray or pandas.DataFrame
            Every party's columns in the card's order; a party that does not
            hold a row has NaN in all its columns there.

        Raises
        ------
        ModelFileError
            If a row has a party's columns partly NaN, or no party at all.
        """
        votes = self.votes(inputs)
        predicted = probabilities(votes)
        logits = votes.logits[:, 0] if votes.logits.shape[1] == 1 else torch.log(predicted)
        return Prediction(predicted.numpy(), logits.numpy(), columns={"class": [f"class={c}" for c in self.classes]})
