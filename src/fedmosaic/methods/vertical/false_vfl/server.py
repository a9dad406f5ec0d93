"""FALSE-VFL (ICLR 2026): a deep latent variable model over blockwise-missing parties.

The server logic is the active party. It holds block 0's encoder and decoder,
``q(z | h)``, ``p(h | z)``, the prior ``p(z) = N(0, I)`` and the classifier
``p_phi(y | h)``. Passive parties (clients) hold their own encoder and decoder
(:mod:`fedmosaic.methods.vertical.false_vfl.client`).

Each round is one epoch (stage 1: ``stage1_passes`` epochs):

- **Stage 1** (rounds ``1..stage1_rounds``, every training row): per
  mini-batch, two exchanges. (1) rows down (with the previous step's
  gradients), local posteriors up; the active party fuses the present
  parties' posteriors into ``q(h | x_obs)`` and draws ``kappa`` samples.
  (2) samples down, each party's ``log p(x^k | h)`` and its gradient in
  ``h`` up. The active party maximises the IWAE bound of ``log p(x_obs)``
  and sends each party the gradients of its posterior and log-likelihoods
  with the next batch (one last ``update`` exchange ends the epoch).
- **Stage 2** (the remaining rounds, labeled rows): the generative parameters
  are frozen, so the local posteriors of the labeled rows are fetched once;
  each round draws ``kappa`` fresh samples per row for each of its
  ``classifier_passes`` passes, fetches their log-likelihoods in one
  exchange, then trains ``phi`` alone on the bound of ``log p(y, x_obs)``,
  each pass on its own samples.
- **Selection**: with a validation split, every stage-2 round predicts the
  validation rows (the same samples every round); the classifier of the
  round with the best accuracy is kept and tested, and stage 2 stops after
  ``patience`` rounds without a better one (the generative parameters, the
  only ones the passive parties hold, are frozen in stage 2).
- **Prediction** (in evaluation rounds of stage 2): posteriors and
  log-likelihoods of the test rows, then
  ``p(y | x_obs) = sum_l w_l p_phi(y | h_l)`` with self-normalised weights
  (``prediction = "snis"``, the paper), or beyond the paper
  ``p_phi(y | mu)`` at the fused posterior mean (``mean``), or the mean on
  rows whose weights are degenerate and SNIS elsewhere (``ess``,
  :func:`~fedmosaic.methods.vertical.false_vfl.prediction.rule_probabilities`). Every test setting reports the rule's
  accuracy, SNIS's, the posterior mean's, SNIS's with each of
  ``report_samples`` and the mean effective sample size of the weights.
- **Party subsets** (``party_subsets``, beyond the paper): each stage-1 step
  also maximises the bound of ``log p(x_S)`` for a random subset ``S`` of
  each row's present parties (the model defines every subset's marginal, so
  the term is a valid bound; both use one exchange, the samples of both
  sent together), and each stage-2 round trains on a random subset of a
  labeled row's parties with probability ``subset_rate``.

Every reply is checked against :mod:`fedmosaic.methods.vertical.replies`; a
party whose reply is rejected is absent for that exchange: its posterior is
left out of the fusion, its log-likelihood out of the weights (both keep the
bounds valid; see docs/methods/vertical.md).
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any, NamedTuple

import numpy as np
import torch
from torch import Tensor, nn
from typing_extensions import override

from fedmosaic.data.vertical_data import VALIDATION, VerticalSplit, card_shapes, test_metric
from fedmosaic.devices import to_device
from fedmosaic.federation import ClientState, Message, ReplySpec, RoundContext, ServerLogic, derive_seed
from fedmosaic.federation.message import as_int
from fedmosaic.methods.architectures import own_model_entries
from fedmosaic.methods.arrays import load_arrays, model_to_arrays, seeded, to_array, to_tensor
from fedmosaic.methods.declared_state import INT, DeclaredState
from fedmosaic.methods.vertical.false_vfl.active import ActiveModel, build_classifier
from fedmosaic.methods.vertical.false_vfl.bounds import effective_sample_size, iwae_bound
from fedmosaic.methods.vertical.false_vfl.fusion import fuse_posteriors
from fedmosaic.methods.vertical.false_vfl.params import FalseVFLParams
from fedmosaic.methods.vertical.false_vfl.prediction import (
    RULE_ACCURACIES,
    class_probabilities,
    predictive_probabilities,
    row_blocks,
    rule_probabilities,
    sample,
)
from fedmosaic.methods.vertical.false_vfl.subsets import random_subsets
from fedmosaic.methods.vertical.optimizer_state import OptimizerSpec, load_optimizer_arrays, optimizer_to_arrays
from fedmosaic.methods.vertical.replies import acknowledgement_spec, loglik_spec, posterior_spec
from fedmosaic.methods.vertical.selection import Selection
from fedmosaic.methods.vertical.task import VerticalTask
from fedmosaic.methods.vertical.tensors import (
    evaluation_config,
    evaluation_from_config,
    gradient,
    heard,
    leaf,
    spread,
    tensor,
)
from fedmosaic.models.export import ModelExport

STATE = DeclaredState({"seed": INT, "trained_round": INT}, attribute_prefix="_")
"""The active party's counters besides its arrays and its steps per stage."""


class Posteriors(NamedTuple):
    """The local posteriors of some rows: ``mean``, ``logvar`` ``(n, K, d)`` and which parties were heard, ``(n, K)``."""

    mean: Tensor
    logvar: Tensor
    heard: Tensor


class FalseVFLServer(ServerLogic):
    """The active party of FALSE-VFL (see the module docstring for the protocol).

    Parameters
    ----------
    task : VerticalTask
        Data and evaluation schedule.
    params : FalseVFLParams
        Hyper-parameters.
    """

    def __init__(self, task: VerticalTask, params: FalseVFLParams) -> None:
        self._task, self._params = task, params
        data = task.data
        self._build = partial(ActiveModel, data.party_shapes[0], data.num_classes, params, data.likelihood)
        self._model: ActiveModel = to_device(self._build())
        self._reset_optimizers()
        self._seed = 0
        self._reset_progress()

    @override
    def initialize(self, seed: int) -> None:
        self._seed = seed
        self._model = to_device(seeded(derive_seed(seed, "active-party"), self._build))
        self._reset_optimizers()
        self._reset_progress()

    def _reset_progress(self) -> None:
        self._labeled: Posteriors | None = None
        self._last_evaluation: dict[str, float] = {}
        self._selection = Selection(self._params.patience)
        self._best_classifier: dict[str, np.ndarray] = {}
        self._steps = {"stage1": 0, "classifier": 0}
        self._trained_round = 0

    @override
    def run_round(self, ctx: RoundContext) -> dict[str, float]:
        if ctx.round <= self._params.stage1_rounds:
            return self._pretrain_epoch(ctx)
        metrics: dict[str, float] = {}
        validation = self._task.data.validation
        if not self._selection.stopped:
            metrics = self._classifier_epoch(ctx)
            self._trained_round = ctx.round
            if validation is not None:
                generator = torch.Generator().manual_seed(derive_seed(self._seed, "predict", VALIDATION))
                metrics["validation_accuracy"], rules = self._predict(
                    ctx, VALIDATION, validation, self._model.classifier, generator
                )
                metrics |= {f"validation_{key}": rules[key] for key in RULE_ACCURACIES}
                if self._selection.offer(ctx.round, metrics["validation_accuracy"]):
                    self._best_classifier = model_to_arrays(self._model.classifier)
        if self._task.evaluates(ctx.round):
            self._last_evaluation = self._evaluate_tests(ctx)
        return metrics

    @override
    def evaluate(self, rnd: int) -> dict[str, float]:
        return dict(self._last_evaluation) if rnd > self._params.stage1_rounds else {}

    @override
    def artifacts(self) -> dict[str, Any]:
        validation = self._task.data.validation
        record = self._selection.record(
            0 if validation is None else len(validation), sum(self._steps.values()), self._trained_round
        )
        return {
            "stage1_rounds": self._params.stage1_rounds,
            "fusion": self._params.fusion,
            "variant": self._params.variant,
            "party_subsets": self._params.party_subsets,
            **record,
            "stage1_steps": self._steps["stage1"],
            "classifier_steps": self._steps["classifier"],
        }

    def _evaluate_tests(self, ctx: RoundContext) -> dict[str, float]:
        """Test accuracy of the selected classifier (the current one without validation) and the mean SNIS ESS, per test setting."""
        classifier = self._model.classifier
        if self._best_classifier:
            classifier = to_device(build_classifier(self._params, self._task.data.num_classes))
            load_arrays(classifier, self._best_classifier)
        diagnostics: dict[str, float] = {}

        def accuracy(name: str, split: VerticalSplit) -> float:
            generator = torch.Generator().manual_seed(derive_seed(self._seed, "predict", name))
            value, extra = self._predict(ctx, name, split, classifier, generator)
            diagnostics.update({test_metric(name, key): v for key, v in extra.items()})
            return value

        return self._task.test_accuracies(accuracy) | diagnostics

    def exported_model(self) -> ModelExport:
        """The model the run tests: the active party's networks here, each passive party's in its own part.

        The active party's classifier is the one selected on validation, else
        the final one.

        ``details`` holds the seed each test setting's prediction drew its
        samples from.
        """
        data = self._task.data
        seeds = {name: derive_seed(self._seed, "predict", name) for name in data.tests}
        arrays = model_to_arrays(self._model) | {f"classifier.{k}": v for k, v in self._best_classifier.items()}
        return ModelExport(
            "false-vfl",
            {
                "widths": list(data.widths),
                **card_shapes(data),
                "num_classes": data.num_classes,
                "likelihood": data.likelihood,
                "params": self._params.model_dump(mode="json"),
                **own_model_entries(model=self._params.model, head=self._params.head),
            },
            arrays,
            part="party-0",
            client_parts=tuple(f"party-{k}" for k in range(1, data.num_parties)),
            details={
                "sampling": {
                    "samples": self._params.predict_samples,
                    "seeds": seeds,
                    "prediction": self._params.prediction,
                    "ess_floor": self._params.ess_floor,
                }
            },
        )

    # ----------------------------------------------------------------- stage 1
    def _pretrain_epoch(self, ctx: RoundContext) -> dict[str, float]:
        split = self._task.data.train
        gradients: dict[int, dict[str, np.ndarray]] = {}
        bounds = []
        for epoch in range(self._params.stage1_passes):
            # the first epoch of a round keeps the seeds of one epoch per round
            key = (ctx.round,) if epoch == 0 else (ctx.round, epoch)
            order = np.random.default_rng(derive_seed(self._seed, *key, "batches")).permutation(len(split))
            batches = np.array_split(order, max(1, math.ceil(len(order) / self._params.batch_size)))
            for step, rows in enumerate(batches):
                generator = torch.Generator().manual_seed(derive_seed(self._seed, *key, step, "samples"))
                bound, gradients = self._pretrain_step(ctx, split, np.sort(rows), gradients, generator)
                bounds.append(bound * len(rows))
        ctx.exchange(
            {c: Message(arrays=gradients.get(c, {}), config={"action": "update"}) for c in ctx.clients},
            expect=acknowledgement_spec("train"),
        )
        return {"iwae_bound": float(sum(bounds) / (len(split) * self._params.stage1_passes))}

    def _pretrain_step(
        self,
        ctx: RoundContext,
        split: VerticalSplit,
        rows: np.ndarray,
        gradients: dict[int, dict[str, np.ndarray]],
        generator: torch.Generator,
    ) -> tuple[float, dict[int, dict[str, np.ndarray]]]:
        present = to_tensor(split.present[rows])
        replies = ctx.exchange(
            {
                c: Message(
                    arrays={"rows": rows, **gradients.get(c, {})}, config={"action": "posterior", "split": "train"}
                )
                for c in ctx.clients
            },
            expect=self._posterior_specs(ctx, present, "train"),
        )
        remote = {c: (leaf(reply.arrays["mean"]), leaf(reply.arrays["logvar"])) for c, reply in replies.items()}
        local = self._local_posteriors(split, rows, present, remote)
        kappa = self._params.kappa
        masks = [local.heard]
        if self._params.party_subsets:
            masks.append(random_subsets(local.heard, 0.5, generator))
        posteriors = [self._fuse(local, mask) for mask in masks]
        h = torch.cat([sample(mean, logvar, kappa, generator) for mean, logvar in posteriors])
        scope = self._scope(present)
        # a party's term counts in the full bound where it is in scope, in a subset's bound where it is in the subset
        weights = torch.cat([terms.float().expand(kappa, -1, -1) for terms in [scope, *masks[1:]]])
        loglik_rows = self._loglik_rows(scope)
        replies = ctx.exchange(
            {
                c: Message(
                    arrays={"rows": rows[loglik_rows[c]], "h": to_array(h[:, loglik_rows[c]])},
                    config={"action": "loglik", "split": "train", "jacobian": True},
                )
                for c in ctx.clients
            },
            expect=self._loglik_specs(ctx, h, loglik_rows, "train", jacobian=True),
        )
        remote_loglik = {c: leaf(reply.arrays["loglik"]) for c, reply in replies.items()}
        surrogates = {}
        for c, value in remote_loglik.items():
            part = h[:, loglik_rows[c]]
            jacobian = tensor(replies[c].arrays["dloglik_dh"])
            surrogates[c] = value + ((part - part.detach()) * jacobian).sum(-1)
        loglik = self._total_loglik(split, rows, present, h, surrogates, loglik_rows, weights)
        samples = [slice(i * kappa, (i + 1) * kappa) for i in range(len(posteriors))]  # each bound's samples
        bounds = [
            iwae_bound(
                self._model.log_weights(h[own], mean, logvar, loglik[own], self._model.top_noise(h[own], generator))
            ).mean()
            for own, (mean, logvar) in zip(samples, posteriors, strict=True)
        ]
        self._generative_optimizer.zero_grad()
        total = sum(bounds)
        assert isinstance(total, Tensor)  # one bound per sampled posterior, never none
        (-total).backward()
        self._generative_optimizer.step()
        self._steps["stage1"] += 1
        # A party missing either reply of this step gets no gradients: its networks skip the step.
        outgoing = {
            c: {
                "grad.mean": gradient(remote[c][0]),
                "grad.logvar": gradient(remote[c][1]),
                "grad.loglik": gradient(remote_loglik[c]),
            }
            for c in sorted(remote.keys() & remote_loglik.keys())
        }
        return float(bounds[0].detach()), outgoing

    # ----------------------------------------------------------------- stage 2
    def _classifier_epoch(self, ctx: RoundContext) -> dict[str, float]:
        split = self._task.data.train
        labeled = split.labeled
        if len(labeled) == 0:
            return {}
        if self._labeled is None:
            with torch.no_grad():
                self._labeled = self._posterior(ctx, "train", split, labeled)
        generator = torch.Generator().manual_seed(derive_seed(self._seed, ctx.round, "stage2"))
        mask, scope = self._labeled.heard, self._scope(to_tensor(split.present[labeled]))
        if self._params.party_subsets:
            drawn = torch.rand(len(labeled), generator=generator).to(mask.device)
            chosen = (drawn < self._params.subset_rate)[:, None]
            subset = random_subsets(mask, 0.5, generator)
            mask, scope = torch.where(chosen, subset, mask), torch.where(chosen, subset, scope)
        kappa, passes = self._params.kappa, self._params.classifier_passes
        with torch.no_grad():  # every pass its own kappa samples per row, fetched in one exchange
            h, log_weights = self._weighted_samples(
                ctx, "train", split, labeled, self._fuse(self._labeled, mask), generator, kappa * passes, scope
            )
        y = to_tensor(split.y[labeled])
        losses = []
        batches = [
            (slice(p * kappa, (p + 1) * kappa), batch)
            for p in range(passes)
            for batch in torch.randperm(len(labeled), generator=generator).to(y.device).split(self._params.batch_size)
        ]
        for own, batch in batches:
            log_joint = log_weights[own, batch] + torch.log_softmax(self._model.classifier(h[own, batch]), -1).gather(
                -1, y[batch].expand(kappa, -1)[..., None]
            ).squeeze(-1)
            loss = -iwae_bound(log_joint).mean()
            self._classifier_optimizer.zero_grad()
            loss.backward()
            self._classifier_optimizer.step()
            self._steps["classifier"] += 1
            losses.append(float(loss.detach()) * len(batch))
        return {"joint_bound": -sum(losses) / (len(labeled) * self._params.classifier_passes)}

    # ---------------------------------------------------------------- predict
    def _predict(
        self, ctx: RoundContext, name: str, split: VerticalSplit, classifier: nn.Module, generator: torch.Generator
    ) -> tuple[float, dict[str, float]]:
        """Accuracy of ``classifier`` on ``split`` by the prediction rule, and the diagnostics.

        The diagnostics: the accuracy of every rule (:data:`RULE_ACCURACIES`),
        ``snis_ess``, the mean effective sample size of the
        ``predict_samples`` weights, and on test splits ``snis<S>_accuracy``
        for each of ``report_samples`` (their samples drawn from a generator
        of their own). Every validated round reports the rules' validation
        accuracies (``validation_snis_accuracy``...), so one run compares
        the rules on validation rows.
        """
        rows = np.arange(len(split))
        y = split.y

        def hits(probabilities: Tensor) -> float:
            return float((to_array(probabilities.argmax(-1)) == y).mean())

        with torch.no_grad():
            local = self._posterior(ctx, name, split, rows)
            scope = self._scope(to_tensor(split.present))
            fused = self._fuse(local, local.heard)
            h, log_weights = self._weighted_samples(
                ctx, name, split, rows, fused, generator, self._params.predict_samples, scope
            )
            snis = predictive_probabilities(log_weights, class_probabilities(classifier, h))
            at_mean = torch.softmax(classifier(fused[0]), -1)
            ess = effective_sample_size(log_weights)
            chosen = rule_probabilities(self._params.prediction, snis, at_mean, ess, self._params.ess_floor)
            ess_rule = rule_probabilities("ess", snis, at_mean, ess, self._params.ess_floor)
            diagnostics = {
                "snis_accuracy": hits(snis),
                "mean_accuracy": hits(at_mean),
                "ess_accuracy": hits(ess_rule),
                "snis_ess": float(ess.mean()),
            }
            if name in self._task.data.tests:
                for count in self._params.report_samples:
                    more = torch.Generator().manual_seed(derive_seed(self._seed, "predict", name, count))
                    h, log_weights = self._weighted_samples(ctx, name, split, rows, fused, more, count, scope)
                    probabilities = predictive_probabilities(log_weights, class_probabilities(classifier, h))
                    diagnostics[f"snis{count}_accuracy"] = hits(probabilities)
        return hits(chosen), diagnostics

    # ---------------------------------------------------------------- helpers
    def _posterior(self, ctx: RoundContext, name: str, split: VerticalSplit, rows: np.ndarray) -> Posteriors:
        present = to_tensor(split.present[rows])
        replies = ctx.exchange(
            {
                c: Message(arrays={"rows": rows}, config={"action": "posterior", "split": name}, kind="evaluate")
                for c in ctx.clients
            },
            expect=self._posterior_specs(ctx, present, "evaluate"),
        )
        remote = {c: (tensor(r.arrays["mean"]), tensor(r.arrays["logvar"])) for c, r in replies.items()}
        return self._local_posteriors(split, rows, present, remote)

    def _weighted_samples(
        self,
        ctx: RoundContext,
        name: str,
        split: VerticalSplit,
        rows: np.ndarray,
        posterior: tuple[Tensor, Tensor],
        generator: torch.Generator,
        samples: int,
        scope: Tensor,
    ) -> tuple[Tensor, Tensor]:
        """Samples of ``q(h | x_obs)`` and their log importance weights (no gradients), over the parties in ``scope``.

        Every draw is made first, for all rows; the parties' log-likelihoods
        are then fetched and weighed a block of rows at a time
        (:func:`row_blocks`), so that the decoders' outputs of many samples
        of a large split never sit in memory at once.
        """
        q_mean, q_logvar = posterior
        h = sample(q_mean, q_logvar, samples, generator)
        noise = self._model.top_noise(h, generator)
        log_weights = [
            self._model.log_weights(
                h[:, block],
                q_mean[block],
                q_logvar[block],
                self._exchanged_loglik(ctx, name, split, rows[block], h[:, block], scope[block]),
                noise[:, block],
            )
            for block in row_blocks(len(rows), samples)
        ]
        return h, torch.cat(log_weights, dim=1)

    def _exchanged_loglik(
        self, ctx: RoundContext, name: str, split: VerticalSplit, rows: np.ndarray, h: Tensor, scope: Tensor
    ) -> Tensor:
        """``log p(x_obs, m | h)`` ``(samples, n)`` of ``rows`` over the parties in ``scope``, the passive ones' fetched."""
        present = to_tensor(split.present[rows])
        loglik_rows = self._loglik_rows(scope)
        replies = ctx.exchange(
            {
                c: Message(
                    arrays={"rows": rows[loglik_rows[c]], "h": to_array(h[:, loglik_rows[c]])},
                    config={"action": "loglik", "split": name, "jacobian": False},
                    kind="evaluate",
                )
                for c in ctx.clients
            },
            expect=self._loglik_specs(ctx, h, loglik_rows, "evaluate", jacobian=False),
        )
        remote = {c: tensor(reply.arrays["loglik"]) for c, reply in replies.items()}
        weights = scope.float().expand(h.shape[0], -1, -1)
        return self._total_loglik(split, rows, present, h, remote, loglik_rows, weights)

    def _local_posteriors(
        self, split: VerticalSplit, rows: np.ndarray, present: Tensor, remote: dict[int, tuple[Tensor, Tensor]]
    ) -> Posteriors:
        """The posteriors of ``rows`` of the active party and of the parties heard (a party whose reply is missing counts as absent)."""
        x = to_tensor(np.nan_to_num(split.blocks[0][rows]))
        own_mean, own_logvar = self._model.party.encoder(x[present[:, 0]])
        none = (own_mean.new_zeros(0, own_mean.shape[-1]),) * 2
        posteriors = [(own_mean, own_logvar)] + [remote.get(c, none) for c in range(present.shape[1] - 1)]
        fused = heard(present, remote)
        means = torch.stack([spread(m, fused[:, k]) for k, (m, _) in enumerate(posteriors)], dim=1)
        logvars = torch.stack([spread(lv, fused[:, k]) for k, (_, lv) in enumerate(posteriors)], dim=1)
        return Posteriors(means, logvars, fused)

    def _fuse(self, local: Posteriors, mask: Tensor) -> tuple[Tensor, Tensor]:
        """``q(h | x_S)`` from the local posteriors of the parties in ``mask`` (within ``local.heard``).

        A row without any gets ``N(0, I)`` (the zeros in block 0's slot). Any
        proposal keeps the bounds valid.
        """
        mask = mask.clone()
        mask[:, 0] |= ~mask.any(1)
        return fuse_posteriors(local.mean, local.logvar, mask, self._params.fusion)

    def _scope(self, present: Tensor) -> Tensor:
        """Whose term of ``log p(x_obs, m | h)`` counts in each row: the present parties (variant I) or every party (II)."""
        return present.clone() if self._params.variant == "I" else torch.ones_like(present)

    def _total_loglik(
        self,
        split: VerticalSplit,
        rows: np.ndarray,
        present: Tensor,
        h: Tensor,
        remote: dict[int, Tensor],
        loglik_rows: dict[int, np.ndarray],
        weights: Tensor,
    ) -> Tensor:
        """``sum_k weights[..., k] log p(x^k, m^k | h)`` ``(samples, n)`` over the active party and the parties heard.

        The active party's term is computed only on the rows where some
        sample weighs it (as the passive parties compute only ``loglik_rows``):
        a row it does not hold costs it nothing.
        """
        own = weights[..., 0].any(0).nonzero().flatten()
        x = to_tensor(np.nan_to_num(split.blocks[0][rows[to_array(own)]]))
        value = self._model.party.log_likelihood(x, present[own, 0], h[:, own])
        total = h.new_zeros(h.shape[:2]).index_add(1, own, value * weights[:, own, 0])
        for c, value in remote.items():
            positions = to_tensor(loglik_rows[c])
            total = total.index_add(1, positions, value * weights[:, positions, c + 1])
        return total

    def _posterior_specs(self, ctx: RoundContext, present: Tensor, kind: str) -> dict[int, ReplySpec]:
        """Each party's posterior reply: the requested rows it holds."""
        return {c: posterior_spec(int(present[:, c + 1].sum()), self._params.latent, kind) for c in ctx.clients}

    def _loglik_specs(
        self, ctx: RoundContext, h: Tensor, loglik_rows: dict[int, np.ndarray], kind: str, *, jacobian: bool
    ) -> dict[int, ReplySpec]:
        """Each party's log-likelihood reply: one per sample of ``h`` and row sent."""
        return {
            c: loglik_spec(h.shape[0], len(loglik_rows[c]), self._params.latent, kind, jacobian=jacobian)
            for c in ctx.clients
        }

    def _loglik_rows(self, scope: Tensor) -> dict[int, np.ndarray]:
        """Positions each client computes log-likelihoods for: where it is in ``scope``."""
        return {c: np.flatnonzero(to_array(scope[:, c + 1])) for c in range(len(self._task.data.widths) - 1)}

    def _reset_optimizers(self) -> None:
        adam = OptimizerSpec("adam", self._params.lr)
        self._generative_optimizer = adam.build(self._model.generative_parameters())
        self._classifier_optimizer = adam.build(self._model.classifier.parameters())

    # ------------------------------------------------------------------ state
    @override
    def state_dict(self) -> ClientState:
        arrays = {f"model.{k}": v for k, v in model_to_arrays(self._model).items()}
        arrays |= optimizer_to_arrays(self._generative_optimizer, "opt.generative.")
        arrays |= optimizer_to_arrays(self._classifier_optimizer, "opt.classifier.")
        arrays |= {f"best.{k}": v for k, v in self._best_classifier.items()}
        if self._labeled is not None:
            arrays |= {f"labeled.{k}": to_array(v) for k, v in self._labeled._asdict().items()}
        config: dict[str, Any] = STATE.save(self)
        config |= {f"steps.{k}": v for k, v in self._steps.items()}
        config |= evaluation_config(self._last_evaluation) | self._selection.config()
        return ClientState(arrays=arrays, config=config)

    @override
    def load_state_dict(self, state: ClientState) -> None:
        load_arrays(self._model, {k[6:]: v for k, v in state.arrays.items() if k.startswith("model.")})
        self._reset_optimizers()
        load_optimizer_arrays(self._generative_optimizer, state.arrays, "opt.generative.")
        load_optimizer_arrays(self._classifier_optimizer, state.arrays, "opt.classifier.")
        self._best_classifier = {k[5:]: np.array(v) for k, v in state.arrays.items() if k.startswith("best.")}
        self._labeled = (
            Posteriors(*(tensor(state.arrays[f"labeled.{k}"]) for k in Posteriors._fields))
            if "labeled.mean" in state.arrays
            else None
        )
        STATE.load(self, state.config)
        self._steps = {k: as_int(state.config[f"steps.{k}"]) for k in self._steps}
        self._last_evaluation = evaluation_from_config(state.config)
        self._selection.load(state.config)
