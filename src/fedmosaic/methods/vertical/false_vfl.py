"""FALSE-VFL (ICLR 2026): a deep latent variable model over blockwise-missing parties.

The server logic is the active party. It holds block 0's encoder and decoder,
``q(z | h)``, ``p(h | z)``, the prior ``p(z) = N(0, I)`` and the classifier
``p_phi(y | h)``. Passive parties (clients) hold their own encoder and decoder
(:mod:`fedmosaic.methods.vertical.false_vfl_client`).

Each round is one epoch:

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
  each epoch draws fresh samples and fetches their log-likelihoods in one
  exchange, then trains ``phi`` alone on the bound of ``log p(y, x_obs)``.
- **Prediction** (in evaluation rounds of stage 2): posteriors and
  log-likelihoods of the test rows, then
  ``p(y | x_obs) = sum_l w_l p_phi(y | h_l)`` with self-normalised weights.

Every reply is checked against :mod:`fedmosaic.methods.vertical.replies`; a
party whose reply is rejected is absent for that exchange: its posterior is
left out of the fusion, its log-likelihood out of the weights (both keep the
bounds valid; see docs/methods/vertical.md).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from fedmosaic.data.vertical_data import VerticalSplit
from fedmosaic.federation import ClientState, Message, ReplySpec, RoundContext, ServerLogic, derive_seed
from fedmosaic.methods.arrays import load_arrays, model_to_arrays, seeded
from fedmosaic.methods.vertical.bounds import iwae_bound, snis_weights
from fedmosaic.methods.vertical.fusion import fuse_posteriors
from fedmosaic.methods.vertical.networks import GaussianEncoder, PartyModel, gaussian_log_prob, mlp
from fedmosaic.methods.vertical.optimizer_state import load_optimizer_arrays, optimizer_to_arrays
from fedmosaic.methods.vertical.params import FalseVFLParams
from fedmosaic.methods.vertical.task import VerticalTask
from fedmosaic.methods.vertical.replies import acknowledgement_spec, loglik_spec, posterior_spec
from fedmosaic.methods.vertical.tensors import evaluation_config, evaluation_from_config, gradient, heard, leaf, spread, tensor
from fedmosaic.models.export import ModelExport


class ActiveModel(nn.Module):
    """The active party's networks: its own block's, the top layer's, and the classifier."""

    def __init__(self, features: int, num_classes: int, params: FalseVFLParams, likelihood: str) -> None:
        super().__init__()
        self.party = PartyModel(features, params.hidden, params.latent, likelihood, params.variant == "II")  # type: ignore[arg-type]
        self.top_encoder = GaussianEncoder(params.latent, params.hidden, params.top_latent)
        self.top_decoder = GaussianEncoder(params.top_latent, params.hidden, params.latent)
        self.classifier = mlp(params.latent, params.hidden, num_classes)

    def generative_parameters(self) -> list[nn.Parameter]:
        """Every parameter but the classifier's (frozen in stage 2)."""
        return [p for name, p in self.named_parameters() if not name.startswith("classifier.")]

    def log_weights(self, h: Tensor, q_mean: Tensor, q_logvar: Tensor, loglik: Tensor, generator: torch.Generator) -> Tensor:
        """``log p(z) p(h | z) p(x_obs | h) - log q(h | x_obs) q(z | h)`` per sample ``(kappa, n)``.

        ``z`` is drawn from ``q(z | h)`` with ``generator``; ``loglik`` sums the parties' terms.
        """
        z_mean, z_logvar = self.top_encoder(h)
        noise = torch.randn(z_mean.shape, generator=generator)
        z = z_mean + torch.exp(0.5 * z_logvar) * noise
        h_mean, h_logvar = self.top_decoder(z)
        log_prior = gaussian_log_prob(z, torch.zeros(()), torch.zeros(()))
        return (
            log_prior
            + gaussian_log_prob(h, h_mean, h_logvar)
            + loglik
            - gaussian_log_prob(h, q_mean, q_logvar)
            - gaussian_log_prob(z, z_mean, z_logvar)
        )


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
        self._build = lambda: ActiveModel(data.widths[0], data.num_classes, params, data.likelihood)
        self._model: ActiveModel = self._build()
        self._reset_optimizers()
        self._seed = 0
        self._labeled_posterior: tuple[np.ndarray, np.ndarray] | None = None
        self._last_evaluation: dict[str, float] = {}

    def initialize(self, seed: int) -> None:
        self._seed = seed
        self._model = seeded(derive_seed(seed, "active-party"), self._build)
        self._reset_optimizers()
        self._labeled_posterior = None
        self._last_evaluation = {}

    def run_round(self, ctx: RoundContext) -> dict[str, float]:
        if ctx.round <= self._params.stage1_rounds:
            metrics = self._pretrain_epoch(ctx)
        else:
            metrics = self._classifier_epoch(ctx)
            if self._task.evaluates(ctx.round):
                self._last_evaluation = self._task.test_accuracies(lambda name, split: self._predict(ctx, name, split))
        return metrics

    def evaluate(self, rnd: int) -> dict[str, float]:
        return dict(self._last_evaluation) if rnd > self._params.stage1_rounds else {}

    def artifacts(self) -> dict[str, Any]:
        return {"stage1_rounds": self._params.stage1_rounds, "fusion": self._params.fusion, "variant": self._params.variant}

    def exported_model(self) -> ModelExport:
        """The final model: the active party's networks here, each passive party's in its own part.

        ``details`` holds the seed each test setting's prediction drew its
        samples from in the last round (which always evaluates).
        """
        data = self._task.data
        seeds = {name: derive_seed(self._seed, self._task.rounds, "predict", name) for name in data.tests}
        return ModelExport(
            "false-vfl",
            {
                "widths": list(data.widths),
                "num_classes": data.num_classes,
                "likelihood": data.likelihood,
                "params": self._params.model_dump(mode="json"),
            },
            model_to_arrays(self._model),
            part="party-0",
            client_parts=tuple(f"party-{k}" for k in range(1, data.num_parties)),
            details={"sampling": {"samples": self._params.predict_samples, "seeds": seeds}},
        )

    # ----------------------------------------------------------------- stage 1
    def _pretrain_epoch(self, ctx: RoundContext) -> dict[str, float]:
        split = self._task.data.train
        order = np.random.default_rng(derive_seed(self._seed, ctx.round, "batches")).permutation(len(split))
        batches = np.array_split(order, max(1, math.ceil(len(order) / self._params.batch_size)))
        gradients: dict[int, dict[str, np.ndarray]] = {}
        bounds = []
        for step, rows in enumerate(batches):
            generator = torch.Generator().manual_seed(derive_seed(self._seed, ctx.round, step, "samples"))
            bound, gradients = self._pretrain_step(ctx, split, np.sort(rows), gradients, generator)
            bounds.append(bound * len(rows))
        ctx.exchange(
            {c: Message(arrays=gradients.get(c, {}), config={"action": "update"}) for c in ctx.clients},
            expect=acknowledgement_spec("train"),
        )
        return {"iwae_bound": float(sum(bounds) / len(order))}

    def _pretrain_step(
        self,
        ctx: RoundContext,
        split: VerticalSplit,
        rows: np.ndarray,
        gradients: dict[int, dict[str, np.ndarray]],
        generator: torch.Generator,
    ) -> tuple[float, dict[int, dict[str, np.ndarray]]]:
        present = torch.from_numpy(split.present[rows])
        replies = ctx.exchange(
            {
                c: Message(arrays={"rows": rows, **gradients.get(c, {})}, config={"action": "posterior", "split": "train"})
                for c in ctx.clients
            },
            expect=self._posterior_specs(ctx, present, "train"),
        )
        remote = {
            c: (leaf(reply.arrays["mean"]), leaf(reply.arrays["logvar"])) for c, reply in replies.items()
        }
        q_mean, q_logvar, h = self._sample(split, rows, present, remote, generator, self._params.kappa)
        loglik_rows = self._loglik_rows(rows, present)
        replies = ctx.exchange(
            {
                c: Message(
                    arrays={"rows": rows[loglik_rows[c]], "h": h[:, loglik_rows[c]].detach().numpy()},
                    config={"action": "loglik", "split": "train", "jacobian": True},
                )
                for c in ctx.clients
            },
            expect=self._loglik_specs(ctx, h, loglik_rows, "train", jacobian=True),
        )
        remote_loglik = {c: leaf(reply.arrays["loglik"]) for c, reply in replies.items()}
        loglik = self._own_loglik(split, rows, present, h)
        for c, value in remote_loglik.items():
            part = h[:, loglik_rows[c]]
            jacobian = torch.from_numpy(np.array(replies[c].arrays["dloglik_dh"]))
            surrogate = value + ((part - part.detach()) * jacobian).sum(-1)
            loglik = loglik.index_add(1, torch.from_numpy(loglik_rows[c]), surrogate)
        log_weights = self._model.log_weights(h, q_mean, q_logvar, loglik, generator)
        bound = iwae_bound(log_weights).mean()
        self._generative_optimizer.zero_grad()
        (-bound).backward()
        self._generative_optimizer.step()
        # A party missing either reply of this step gets no gradients: its networks skip the step.
        outgoing = {
            c: {
                "grad.mean": gradient(remote[c][0]),
                "grad.logvar": gradient(remote[c][1]),
                "grad.loglik": gradient(remote_loglik[c]),
            }
            for c in sorted(remote.keys() & remote_loglik.keys())
        }
        return float(bound.detach()), outgoing

    # ----------------------------------------------------------------- stage 2
    def _classifier_epoch(self, ctx: RoundContext) -> dict[str, float]:
        split = self._task.data.train
        labeled = split.labeled
        if len(labeled) == 0:
            return {}
        if self._labeled_posterior is None:
            with torch.no_grad():
                mean, logvar = self._posterior(ctx, "train", split, labeled)
            self._labeled_posterior = (mean.numpy(), logvar.numpy())
        generator = torch.Generator().manual_seed(derive_seed(self._seed, ctx.round, "stage2"))
        with torch.no_grad():
            h, log_weights = self._weighted_samples(ctx, "train", split, labeled, self._labeled_posterior, generator, self._params.kappa)
        y = torch.from_numpy(split.y[labeled])
        losses = []
        batches = [
            batch
            for _ in range(self._params.classifier_passes)
            for batch in torch.randperm(len(labeled), generator=generator).split(self._params.batch_size)
        ]
        for batch in batches:
            log_joint = log_weights[:, batch] + torch.log_softmax(self._model.classifier(h[:, batch]), -1).gather(
                -1, y[batch].expand(h.shape[0], -1)[..., None]
            ).squeeze(-1)
            loss = -iwae_bound(log_joint).mean()
            self._classifier_optimizer.zero_grad()
            loss.backward()
            self._classifier_optimizer.step()
            losses.append(float(loss.detach()) * len(batch))
        return {"joint_bound": -sum(losses) / (len(labeled) * self._params.classifier_passes)}

    # ---------------------------------------------------------------- predict
    def _predict(self, ctx: RoundContext, name: str, split: VerticalSplit) -> float:
        rows = np.arange(len(split))
        generator = torch.Generator().manual_seed(derive_seed(self._seed, ctx.round, "predict", name))
        with torch.no_grad():
            mean, logvar = self._posterior(ctx, name, split, rows)
            h, log_weights = self._weighted_samples(
                ctx, name, split, rows, (mean.numpy(), logvar.numpy()), generator, self._params.predict_samples
            )
            probabilities = predictive_probabilities(log_weights, torch.softmax(self._model.classifier(h), -1))
        return float((probabilities.argmax(-1).numpy() == split.y).mean())

    # ---------------------------------------------------------------- helpers
    def _posterior(self, ctx: RoundContext, name: str, split: VerticalSplit, rows: np.ndarray) -> tuple[Tensor, Tensor]:
        present = torch.from_numpy(split.present[rows])
        replies = ctx.exchange(
            {c: Message(arrays={"rows": rows}, config={"action": "posterior", "split": name}, kind="evaluate") for c in ctx.clients},
            expect=self._posterior_specs(ctx, present, "evaluate"),
        )
        remote = {c: (tensor(r.arrays["mean"]), tensor(r.arrays["logvar"])) for c, r in replies.items()}
        return self._fuse(split, rows, present, remote)

    def _weighted_samples(
        self,
        ctx: RoundContext,
        name: str,
        split: VerticalSplit,
        rows: np.ndarray,
        posterior: tuple[np.ndarray, np.ndarray],
        generator: torch.Generator,
        samples: int,
    ) -> tuple[Tensor, Tensor]:
        """Samples of ``q(h | x_obs)`` and their log importance weights (no gradients)."""
        q_mean, q_logvar = tensor(posterior[0]), tensor(posterior[1])
        h = q_mean + torch.exp(0.5 * q_logvar) * torch.randn((samples, *q_mean.shape), generator=generator)
        present = torch.from_numpy(split.present[rows])
        loglik_rows = self._loglik_rows(rows, present)
        replies = ctx.exchange(
            {
                c: Message(
                    arrays={"rows": rows[loglik_rows[c]], "h": h[:, loglik_rows[c]].numpy()},
                    config={"action": "loglik", "split": name, "jacobian": False},
                    kind="evaluate",
                )
                for c in ctx.clients
            },
            expect=self._loglik_specs(ctx, h, loglik_rows, "evaluate", jacobian=False),
        )
        loglik = self._own_loglik(split, rows, present, h)
        for c, reply in replies.items():
            loglik = loglik.index_add(1, torch.from_numpy(loglik_rows[c]), tensor(reply.arrays["loglik"]))
        return h, self._model.log_weights(h, q_mean, q_logvar, loglik, generator)

    def _sample(
        self,
        split: VerticalSplit,
        rows: np.ndarray,
        present: Tensor,
        remote: dict[int, tuple[Tensor, Tensor]],
        generator: torch.Generator,
        samples: int,
    ) -> tuple[Tensor, Tensor, Tensor]:
        q_mean, q_logvar = self._fuse(split, rows, present, remote)
        noise = torch.randn((samples, *q_mean.shape), generator=generator)
        return q_mean, q_logvar, q_mean + torch.exp(0.5 * q_logvar) * noise

    def _fuse(
        self, split: VerticalSplit, rows: np.ndarray, present: Tensor, remote: dict[int, tuple[Tensor, Tensor]]
    ) -> tuple[Tensor, Tensor]:
        """``q(h | x_obs)`` of ``rows`` from the posteriors of the parties heard.

        A passive party whose reply is missing counts as absent from the
        fusion; a row left without any posterior gets ``N(0, I)`` (the zeros
        in block 0's slot). Any proposal keeps the bounds valid.
        """
        x = torch.from_numpy(np.nan_to_num(split.blocks[0][rows]))
        own_mean, own_logvar = self._model.party.encoder(x[present[:, 0]])
        none = (own_mean.new_zeros(0, own_mean.shape[-1]),) * 2
        posteriors = [(own_mean, own_logvar)] + [remote.get(c, none) for c in range(present.shape[1] - 1)]
        fused = heard(present, remote)
        means = torch.stack([spread(m, fused[:, k]) for k, (m, _) in enumerate(posteriors)], dim=1)
        logvars = torch.stack([spread(lv, fused[:, k]) for k, (_, lv) in enumerate(posteriors)], dim=1)
        fused[:, 0] |= ~fused.any(1)
        return fuse_posteriors(means, logvars, fused, self._params.fusion)

    def _posterior_specs(self, ctx: RoundContext, present: Tensor, kind: str) -> dict[int, ReplySpec]:
        """Each party's posterior reply: the requested rows it holds."""
        return {c: posterior_spec(int(present[:, c + 1].sum()), self._params.latent, kind) for c in ctx.clients}

    def _loglik_specs(
        self, ctx: RoundContext, h: Tensor, loglik_rows: dict[int, np.ndarray], kind: str, *, jacobian: bool
    ) -> dict[int, ReplySpec]:
        """Each party's log-likelihood reply: one per sample of ``h`` and row sent."""
        return {
            c: loglik_spec(h.shape[0], len(loglik_rows[c]), self._params.latent, kind, jacobian=jacobian) for c in ctx.clients
        }

    def _loglik_rows(self, rows: np.ndarray, present: Tensor) -> dict[int, np.ndarray]:
        """Positions (within ``rows``) each client computes log-likelihoods for."""
        everyone = np.arange(len(rows))
        if self._params.variant == "II":
            return {c: everyone for c in range(len(self._task.data.widths) - 1)}
        return {c: everyone[present[:, c + 1].numpy()] for c in range(len(self._task.data.widths) - 1)}

    def _own_loglik(self, split: VerticalSplit, rows: np.ndarray, present: Tensor, h: Tensor) -> Tensor:
        x = torch.from_numpy(np.nan_to_num(split.blocks[0][rows]))
        return self._model.party.log_likelihood(x, present[:, 0], h)

    def _reset_optimizers(self) -> None:
        lr = self._params.lr
        self._generative_optimizer = torch.optim.Adam(self._model.generative_parameters(), lr=lr)
        self._classifier_optimizer = torch.optim.Adam(self._model.classifier.parameters(), lr=lr)

    # ------------------------------------------------------------------ state
    def state_dict(self) -> ClientState:
        arrays = {f"model.{k}": v for k, v in model_to_arrays(self._model).items()}
        arrays |= optimizer_to_arrays(self._generative_optimizer, "opt.generative.")
        arrays |= optimizer_to_arrays(self._classifier_optimizer, "opt.classifier.")
        if self._labeled_posterior is not None:
            arrays["labeled.mean"], arrays["labeled.logvar"] = self._labeled_posterior
        config: dict[str, Any] = {"seed": self._seed}
        config |= evaluation_config(self._last_evaluation)
        return ClientState(arrays=arrays, config=config)

    def load_state_dict(self, state: ClientState) -> None:
        load_arrays(self._model, {k[6:]: v for k, v in state.arrays.items() if k.startswith("model.")})
        self._reset_optimizers()
        load_optimizer_arrays(self._generative_optimizer, state.arrays, "opt.generative.")
        load_optimizer_arrays(self._classifier_optimizer, state.arrays, "opt.classifier.")
        self._labeled_posterior = (
            (np.array(state.arrays["labeled.mean"]), np.array(state.arrays["labeled.logvar"]))
            if "labeled.mean" in state.arrays
            else None
        )
        self._seed = int(state.config["seed"])
        self._last_evaluation = evaluation_from_config(state.config)


def predictive_probabilities(log_weights: Tensor, class_probabilities: Tensor) -> Tensor:
    """``sum_l w_l p_phi(y | h_l)`` with self-normalised weights.

    Parameters
    ----------
    log_weights : Tensor
        ``(samples, n)`` log importance weights.
    class_probabilities : Tensor
        ``(samples, n, classes)``.

    Returns
    -------
    Tensor
        ``(n, classes)``, rows summing to one.
    """
    return (snis_weights(log_weights)[..., None] * class_probabilities).sum(0)
