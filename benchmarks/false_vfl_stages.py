"""FALSE-VFL's two stages in one process: how far stage 1 converges, and why the prediction weights are degenerate.

The same networks (``ActiveModel``, ``PartyModel``), fusion and bounds as
``false-vfl``, trained without the federation (its exchanged gradients equal
those of one joint computation: ``tests/methods/vertical/test_false_vfl.py``),
on the vfl-isolet data (ISOLET, 8 even parties, 400 training labels and 100
for validation), seed 0. Printed as JSON lines:

- stage 1, every ``--every`` epochs: the training bound; on the MCAR 0 test
  rows the 20-sample bound, the mean effective sample size of the weights,
  the spread (standard deviation over samples, mean over rows) of the log
  weights and of their three terms (the parties' ``log p(x^k | h)``, the top
  layer ``log p(z) + log p(h | z) - log q(z | h)``, the proposal
  ``log q(h | x_obs)``), the mean standard deviation of the fused and of the
  local posteriors, each party's reconstruction ``log p(x^k | h)`` at the
  fused mean, and the decoders' mean standard deviation;
- stage 2, every five epochs: validation accuracy of the self-normalised
  prediction, of uniform weights over the same samples, of the classifier at
  the posterior mean, and the mean ESS;
- the test accuracies (same three predictions, and the ESS) of the
  classifier selected on validation, with ``predict_samples`` samples and
  then with each of ``--more-samples``.

Usage: python benchmarks/false_vfl_stages.py [--stage1-epochs 20] [--reuse-samples]
    [--params '{"latent": 64, "hidden": 128}'] [--more-samples 200 1000] [--train mcar:0.5] [--data-dir DIR]
"""

from __future__ import annotations

import argparse
import json
import time
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import torch
from _common import default_data_dir
from torch import Tensor

from fedmosaic.data.vertical_data import VerticalSplit
from fedmosaic.experiments.config import load_config
from fedmosaic.experiments.vertical_workload import prepare_vertical
from fedmosaic.methods.vertical.bounds import effective_sample_size, iwae_bound
from fedmosaic.methods.vertical.false_vfl import ActiveModel, predictive_probabilities, sample
from fedmosaic.methods.vertical.fusion import fuse_posteriors
from fedmosaic.methods.vertical.networks import PartyModel, gaussian_log_prob
from fedmosaic.methods.vertical.params import FalseVFLParams

CHUNK = 256
"""Rows per chunk of the log weights."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train", default="mcar:0.5", help="training missingness")
    parser.add_argument("--stage1-epochs", type=int, default=20)
    parser.add_argument("--stage2-epochs", type=int, default=20)
    parser.add_argument("--reuse-samples", action="store_true", help="all passes of a stage-2 epoch on one draw")
    parser.add_argument("--params", default="{}", help="FALSE-VFL parameters as JSON")
    parser.add_argument("--every", type=int, default=5)
    parser.add_argument("--more-samples", type=int, nargs="*", default=[], help="also predict with these many samples")
    parser.add_argument("--data-dir", type=Path, default=default_data_dir())
    args = parser.parse_args()
    torch.set_num_threads(1)
    source = tomllib.loads(resources.files("fedmosaic.experiments.presets").joinpath("vfl-isolet.toml").read_text())
    source["vertical"]["train_missing"] = args.train
    source["vertical"]["test_missing"] = ["mcar:0.0", "mcar:0.5", "mnar:0.9"]
    source["runs"] = source["runs"][:1]
    data = prepare_vertical(load_config(source), data_dir=args.data_dir).data
    params = FalseVFLParams(**json.loads(args.params))
    torch.manual_seed(0)
    active = ActiveModel(data.widths[0], data.num_classes, params, data.likelihood)
    parties = [active.party] + [PartyModel(w, params.hidden, params.latent, data.likelihood) for w in data.widths[1:]]
    generative = active.generative_parameters() + [p for m in parties[1:] for p in m.parameters()]
    model = Model(active, parties, params)
    generator = torch.Generator().manual_seed(1)
    start = time.time()
    optimizer = torch.optim.Adam(generative, lr=params.lr)
    train = data.train
    for epoch in range(1, args.stage1_epochs + 1):
        total = 0.0
        for rows in torch.randperm(len(train), generator=generator).split(params.batch_size):
            log_weights = model.log_weights(train, np.sort(rows.numpy()), params.kappa, generator)
            bound = iwae_bound(sum(log_weights)).mean()
            optimizer.zero_grad()
            (-bound).backward()
            optimizer.step()
            total += float(bound.detach()) * len(rows)
        if epoch == 1 or epoch % args.every == 0:
            report = model.diagnose(data.tests["MCAR 0"], generator)
            print(json.dumps({"stage1_epoch": epoch, "bound": total / len(train), "mcar0": report}), flush=True)
    for p in generative:
        p.requires_grad_(False)
    classifier = torch.optim.Adam(active.classifier.parameters(), lr=params.lr)
    labeled = train.labeled
    y = torch.from_numpy(train.y[labeled])
    best: tuple[float, dict[str, Tensor], int] = (-1.0, {}, 0)
    for epoch in range(1, args.stage2_epochs + 1):
        draws = 1 if args.reuse_samples else params.classifier_passes
        with torch.no_grad():
            h_all, log_weights_all = model.weighted_samples(train, labeled, params.kappa * draws, generator)
        for p in range(params.classifier_passes):
            own = slice(None) if args.reuse_samples else slice(p * params.kappa, (p + 1) * params.kappa)
            h, log_weights = h_all[own], log_weights_all[own]
            for batch in torch.randperm(len(labeled), generator=generator).split(params.batch_size):
                log_p_y = torch.log_softmax(active.classifier(h[:, batch]), -1)
                log_joint = (
                    log_weights[:, batch] + log_p_y.gather(-1, y[batch].expand(h.shape[0], -1)[..., None])[..., 0]
                )
                loss = -iwae_bound(log_joint).mean()
                classifier.zero_grad()
                loss.backward()
                classifier.step()
        assert data.validation is not None
        validation = model.predict(data.validation)
        if validation["snis"] > best[0]:
            best = (validation["snis"], {k: v.clone() for k, v in active.classifier.state_dict().items()}, epoch)
        if epoch % 5 == 0:
            print(json.dumps({"stage2_epoch": epoch, "validation": validation}), flush=True)
    active.classifier.load_state_dict(best[1])
    tests = {name: model.predict(split) for name, split in data.tests.items()}
    print(json.dumps({"selected_epoch": best[2], "test": tests, "seconds": round(time.time() - start)}), flush=True)
    for samples in args.more_samples:
        tests = {name: model.predict(split, samples=samples) for name, split in data.tests.items()}
        print(json.dumps({"predict_samples": samples, "test": tests}), flush=True)


class Model:
    """The active party's and the passive parties' networks in one place."""

    def __init__(self, active: ActiveModel, parties: list[PartyModel], params: FalseVFLParams) -> None:
        self.active, self.parties, self.params = active, parties, params

    def posterior(self, split: VerticalSplit, rows: np.ndarray) -> tuple[list[Tensor], Tensor, Tensor, Tensor]:
        """Blocks, presence, local posteriors ``(n, K, d)`` (mean and log-variance stacked last) and fused ``q``."""
        xs = [torch.from_numpy(np.nan_to_num(b[rows])) for b in split.blocks]
        present = torch.from_numpy(split.present[rows])
        means, logvars = zip(*[m.encoder(x) for m, x in zip(self.parties, xs, strict=True)], strict=True)
        mean, logvar = torch.stack(means, 1), torch.stack(logvars, 1)
        fused = torch.stack(fuse_posteriors(mean, logvar, present, self.params.fusion))
        return xs, present, torch.stack([mean, logvar]), fused

    def terms(
        self, xs: list[Tensor], present: Tensor, h: Tensor, fused: Tensor, generator: torch.Generator
    ) -> tuple[Tensor, Tensor, Tensor]:
        """The three terms of the log weights: parties, top layer, ``-log q(h | x_obs)`` (in chunks of rows)."""
        noise = torch.randn((*h.shape[:-1], self.params.top_latent), generator=generator)
        parts = [self._terms([x[r] for x in xs], present[r], h[:, r], fused[:, r], noise[:, r]) for r in row_chunks(h)]
        return tuple(torch.cat(terms, dim=1) for terms in zip(*parts, strict=True))  # type: ignore[return-value]

    def _terms(
        self, xs: list[Tensor], present: Tensor, h: Tensor, fused: Tensor, noise: Tensor
    ) -> tuple[Tensor, Tensor, Tensor]:
        z_mean, z_logvar = self.active.top_encoder(h)
        z = z_mean + torch.exp(0.5 * z_logvar) * noise
        h_mean, h_logvar = self.active.top_decoder(z)
        parties = sum(
            m.log_likelihood(x, present[:, k], h) for k, (m, x) in enumerate(zip(self.parties, xs, strict=True))
        )
        top = (
            gaussian_log_prob(z, torch.zeros(()), torch.zeros(()))
            + gaussian_log_prob(h, h_mean, h_logvar)
            - gaussian_log_prob(z, z_mean, z_logvar)
        )
        return parties, top, -gaussian_log_prob(h, fused[0], fused[1])  # type: ignore[return-value]

    def log_weights(
        self, split: VerticalSplit, rows: np.ndarray, samples: int, generator: torch.Generator
    ) -> tuple[Tensor, Tensor, Tensor]:
        """The three terms of the log weights of ``samples`` draws of the fused posterior (with gradients)."""
        xs, present, _, fused = self.posterior(split, rows)
        h = sample(fused[0], fused[1], samples, generator)
        return self.terms(xs, present, h, fused, generator)

    def weighted_samples(
        self, split: VerticalSplit, rows: np.ndarray, samples: int, generator: torch.Generator
    ) -> tuple[Tensor, Tensor]:
        """``samples`` draws of the fused posterior and their log weights."""
        xs, present, _, fused = self.posterior(split, rows)
        h = sample(fused[0], fused[1], samples, generator)
        return h, sum(self.terms(xs, present, h, fused, generator))  # type: ignore[return-value]

    def diagnose(self, split: VerticalSplit, generator: torch.Generator, samples: int = 20) -> dict[str, Any]:
        """Bound, ESS, spreads of the log weights and their terms, posterior and decoder scales on ``split``."""
        rows = np.arange(len(split))
        with torch.no_grad():
            xs, present, local, fused = self.posterior(split, rows)
            h = sample(fused[0], fused[1], samples, generator)
            parties, top, proposal = self.terms(xs, present, h, fused, generator)
            log_weights = parties + top + proposal
            reconstruction = [
                float(m.decoder.log_prob(x, fused[0][None])[0][present[:, k]].mean())
                for k, (m, x) in enumerate(zip(self.parties, xs, strict=True))
            ]
        return {
            "bound": float(iwae_bound(log_weights).mean()),
            "ess": float(effective_sample_size(log_weights).mean()),
            "sd_log_weights": _spread(log_weights),
            "sd_parties": _spread(parties),
            "sd_top": _spread(top),
            "sd_proposal": _spread(proposal),
            "fused_std": float((0.5 * fused[1]).exp().mean()),
            "local_std": float((0.5 * local[1]).exp()[present].mean()),
            "reconstruction": [round(r, 1) for r in reconstruction],
            "decoder_std": float(np.mean([(0.5 * m.decoder.logvar).exp().mean().item() for m in self.parties])),
        }

    def predict(self, split: VerticalSplit, seed: int = 5, samples: int | None = None) -> dict[str, float]:
        """Accuracy of the SNIS prediction, of uniform weights over the same samples, at the posterior mean; ESS."""
        generator = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            xs, present, _, fused = self.posterior(split, np.arange(len(split)))
            h = sample(fused[0], fused[1], samples or self.params.predict_samples, generator)
            log_weights = sum(self.terms(xs, present, h, fused, generator))
            probabilities = torch.cat([torch.softmax(self.active.classifier(h[:, r]), -1) for r in row_chunks(h)], 1)
            predictions = {
                "snis": predictive_probabilities(log_weights, probabilities),  # type: ignore[arg-type]
                "uniform": probabilities.mean(0),
                "posterior_mean": torch.softmax(self.active.classifier(fused[0]), -1),
            }
        result = {k: float((p.argmax(-1).numpy() == split.y).mean()) for k, p in predictions.items()}
        return result | {"ess": float(effective_sample_size(log_weights).mean())}  # type: ignore[arg-type]


def row_chunks(h: Tensor) -> list[slice]:
    """Slices of ``CHUNK`` rows of samples ``(samples, n, d)`` (bounds the memory of many samples)."""
    return [slice(start, start + CHUNK) for start in range(0, h.shape[1], CHUNK)]


def _spread(values: Tensor) -> float:
    """Standard deviation over the samples (dimension 0), mean over the rows."""
    return float(values.std(0).mean())


if __name__ == "__main__":
    main()
