"""The split-network baselines: Local, Vanilla VFL, PlugVFL and LASER-VFL.

Each is a :class:`Baseline` for the
one training loop of :class:`~fedmosaic.methods.vertical.split.server.SplitServer`.
At test time a baseline casts :class:`Votes`: one or more heads' logits per
row; the run's accuracy (:func:`accuracy`) and a loaded model's class
probabilities (:func:`probabilities`) both come from them.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, NamedTuple, Protocol

import numpy as np
import torch
from torch import Tensor, nn
from torch.nn import functional as F
from typing_extensions import override

from fedmosaic.data.vertical_data import VerticalSplit
from fedmosaic.methods.vertical.networks import mlp
from fedmosaic.methods.vertical.split.params import SplitVFLParams
from fedmosaic.methods.vertical.task import Fallback


class Votes(NamedTuple):
    """A baseline's test-time prediction: each voting head's logits, and which heads vote in which row."""

    logits: Tensor
    """``(n, V, C)``: every head's logits (one-hot-like for a row predicted by the fallback class)."""
    voting: Tensor
    """bool ``(n, V)``: the heads that vote in each row (at least one)."""


def single_vote(logits: Tensor) -> Votes:
    """The votes of a baseline with one head: ``logits`` ``(n, C)``."""
    return Votes(logits[:, None], torch.ones(len(logits), 1, dtype=torch.bool, device=logits.device))


def fallback_logits(rows: int, num_classes: int, fallback: int | Tensor, device: torch.device) -> Tensor:
    """``(rows, C)`` logits on ``device`` whose softmax is one-hot on ``fallback`` (a class, or one per row there).

    Examples
    --------
    >>> torch.softmax(fallback_logits(2, 3, torch.tensor([2, 0]), torch.device("cpu")), -1).tolist()
    [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]
    """
    logits = torch.full((rows, num_classes), -math.inf, device=device)
    logits[torch.arange(rows, device=device), fallback] = 0.0
    return logits


def aligned_only(
    votes: Votes, present: Tensor, unaligned: Fallback, majority: int, generator: torch.Generator
) -> Votes:
    """``votes`` where the rows not every party holds get the fallback prediction instead.

    The paper protocol's Vanilla VFL, PlugVFL and FedHSSL predict only the
    fully aligned rows; elsewhere every voting head predicts a uniformly
    random class (``random``, as the LASER-VFL reference's decoupled Vanilla
    VFL) or the ``majority`` training class. ``model`` leaves ``votes`` as
    they are.

    Examples
    --------
    >>> votes = single_vote(torch.tensor([[0.0, 1.0], [0.0, 1.0]]))
    >>> present = torch.tensor([[True, True], [True, False]])
    >>> restricted = aligned_only(votes, present, "majority", 0, torch.Generator())
    >>> restricted.logits.argmax(-1).flatten().tolist()
    [1, 0]
    """
    if unaligned == "model":
        return votes
    partial = ~present.all(1)
    _, heads, classes = votes.logits.shape
    if unaligned == "random":
        drawn = torch.randint(classes, (int(partial.sum()),), generator=generator)
        chosen: int | Tensor = drawn.to(votes.logits.device)
    else:
        chosen = majority
    logits = votes.logits.clone()
    logits[partial] = fallback_logits(int(partial.sum()), classes, chosen, logits.device)[:, None].expand(-1, heads, -1)
    return Votes(logits, votes.voting)


def accuracy(votes: Votes, y: Tensor) -> float:
    """Share of the voting heads whose most likely class is ``y``, averaged over the rows."""
    correct = (votes.logits.argmax(-1) == y[:, None]) & votes.voting
    return float((correct.sum(1) / votes.voting.sum(1)).mean())


def probabilities(votes: Votes) -> Tensor:
    """``(n, C)``: the voting heads' class probabilities, averaged."""
    voting = votes.voting[..., None]
    return torch.where(voting, torch.softmax(votes.logits, -1), 0.0).sum(1) / voting.sum(1)


def fully_aligned_labeled_rows(split: VerticalSplit) -> np.ndarray:
    """Labeled rows that every party holds."""
    labeled = split.labeled
    aligned: np.ndarray = labeled[split.present[labeled].all(axis=1)]
    return aligned


class Baseline(Protocol):
    """How a split-network baseline trains and predicts."""

    uses_passive_parties: bool
    """Whether passive parties take part (Local: no)."""
    zero_fill_at_test: bool
    """Whether absent blocks are zero-filled and embedded at test time (Vanilla VFL)."""
    unaligned: Fallback
    """What it predicts on test rows not every party holds (``model``: its network's prediction, :func:`aligned_only`)."""

    def train_rows(self, split: VerticalSplit) -> np.ndarray:
        """Rows (labeled) the baseline trains on."""

    def head(self, num_parties: int, params: SplitVFLParams, num_classes: int) -> nn.Module:
        """The active party's head over the embeddings (widths and depth from ``params``)."""

    def loss(
        self, head: nn.Module, embeddings: Tensor, present: Tensor, y: Tensor, generator: torch.Generator
    ) -> Tensor:
        """Training loss of a batch; ``embeddings`` ``(n, K, e)`` hold zeros for absent parties."""

    def votes(self, head: nn.Module, embeddings: Tensor, present: Tensor, fallback: int) -> Votes:
        """Test-time prediction; ``fallback`` is the majority training class."""


@dataclass(frozen=True)
class Local(Baseline):
    """The active party alone, trained on its labeled rows.

    Test rows without the active party get the majority training class.
    With labels among all rows (``vertical.label_rows = "all"``) it trains on
    the labeled rows it holds.
    """

    unaligned: Fallback = "model"
    uses_passive_parties = False
    zero_fill_at_test = False

    @override
    def train_rows(self, split: VerticalSplit) -> np.ndarray:
        labeled = split.labeled
        held: np.ndarray = labeled[split.present[labeled, 0]]
        return held

    @override
    def head(self, num_parties: int, params: SplitVFLParams, num_classes: int) -> nn.Module:
        return mlp(params.embedding, params.hidden, num_classes, params.head_depth)

    @override
    def loss(
        self, head: nn.Module, embeddings: Tensor, present: Tensor, y: Tensor, generator: torch.Generator
    ) -> Tensor:
        return F.cross_entropy(head(embeddings[:, 0]), y)

    @override
    def votes(self, head: nn.Module, embeddings: Tensor, present: Tensor, fallback: int) -> Votes:
        logits = head(embeddings[:, 0])
        return single_vote(
            torch.where(present[:, :1], logits, fallback_logits(len(logits), logits.shape[1], fallback, logits.device))
        )


@dataclass(frozen=True)
class Concatenation(Baseline):
    """A split network over the concatenated embeddings.

    Vanilla VFL trains on the fully aligned labeled rows. PlugVFL, as in the
    LASER-VFL reference code, trains on every labeled row (every row the
    active party holds has its label): absent passive parties are zero
    embeddings, present ones are zeroed with probability ``dropout``.

    Parameters
    ----------
    dropout : float, default 0.0
        PlugVFL: probability that a present passive party's embedding is
        zeroed in a training row; 0 gives Vanilla VFL.
    zero_fill_at_test : bool, default True
        Vanilla VFL: absent blocks are zero-filled and embedded at test time.
        PlugVFL (False): absent parties' embeddings are zeros.
    aligned_only : bool, default True
        Vanilla VFL: train on the fully aligned labeled rows only; PlugVFL
        (False): on every labeled row.
    unaligned : {"model", "random", "majority"}, default "model"
        Test rows not every party holds: the network predicts them, or (the
        paper protocol) they get a random or the majority class (:func:`aligned_only`).
    """

    dropout: float = 0.0
    zero_fill_at_test: bool = True
    aligned_only: bool = True
    unaligned: Fallback = "model"
    uses_passive_parties = True

    @override
    def train_rows(self, split: VerticalSplit) -> np.ndarray:
        return fully_aligned_labeled_rows(split) if self.aligned_only else split.labeled

    @override
    def head(self, num_parties: int, params: SplitVFLParams, num_classes: int) -> nn.Module:
        return mlp(num_parties * params.embedding, params.hidden, num_classes, params.head_depth)

    @override
    def loss(
        self, head: nn.Module, embeddings: Tensor, present: Tensor, y: Tensor, generator: torch.Generator
    ) -> Tensor:
        kept = torch.rand(present.shape, generator=generator).to(present.device) >= self.dropout
        kept[:, 0] = True
        return F.cross_entropy(head((embeddings * kept[..., None]).flatten(1)), y)

    @override
    def votes(self, head: nn.Module, embeddings: Tensor, present: Tensor, fallback: int) -> Votes:
        return single_vote(head(embeddings.flatten(1)))


@dataclass(frozen=True)
class LaserVFL(Baseline):
    """LASER-VFL: a head per party over the mean embedding of a subset of the present parties.

    Training estimates, for every row with present set ``O``, the sum over
    subsets ``S`` of ``O`` of ``1/|S|`` times the sum over ``k`` in ``S`` of
    head ``k``'s cross-entropy on the mean embedding of ``S``: for each
    ``k`` in ``O`` and each size ``s``, one subset containing ``k`` is drawn
    uniformly and weighted by :func:`laser_weight`. At test time each present
    party's head predicts from the mean over all present parties; the
    accuracy is averaged over the present heads of each row, then over rows
    (a row with no block left, all lost to rejected replies, gets the
    majority training class).

    Parameters
    ----------
    shared_masks : bool, default True
        Draw the subsets of a step from one random ranking of the parties per
        batch, as the reference code does (rows with the same present parties
        share their subsets); False draws one per row. Each row's subset is
        uniform either way.
    """

    shared_masks: bool = True
    unaligned: Fallback = "model"
    uses_passive_parties = True
    zero_fill_at_test = False

    @override
    def train_rows(self, split: VerticalSplit) -> np.ndarray:
        return split.labeled

    @override
    def head(self, num_parties: int, params: SplitVFLParams, num_classes: int) -> nn.Module:
        return nn.ModuleList(
            [mlp(params.embedding, params.hidden, num_classes, params.head_depth) for _ in range(num_parties)]
        )

    @override
    def loss(
        self, head: nn.Module, embeddings: Tensor, present: Tensor, y: Tensor, generator: torch.Generator
    ) -> Tensor:
        assert isinstance(head, nn.ModuleList)
        sizes = present.sum(1)
        total = embeddings.new_zeros(())
        for party in range(present.shape[1]):
            for size in range(1, int(sizes.max()) + 1):
                rows = present[:, party] & (sizes >= size)
                if not rows.any():
                    continue
                subset = sample_subsets(present[rows], party, size, generator, shared=self.shared_masks)
                mean = (embeddings[rows] * subset[..., None]).sum(1) / size
                weight = laser_weight(sizes[rows], size)
                total = total + (weight * F.cross_entropy(head[party](mean), y[rows], reduction="none")).sum()
        return total / len(y)

    @override
    def votes(self, head: nn.Module, embeddings: Tensor, present: Tensor, fallback: int) -> Votes:
        assert isinstance(head, nn.ModuleList)
        mean = (embeddings * present[..., None]).sum(1) / present.sum(1, keepdim=True)
        logits = torch.stack([head[k](mean) for k in range(present.shape[1])], dim=1)
        unheard = ~present.any(1)
        if not unheard.any():
            return Votes(logits, present)
        # every block of the row lost to rejected replies: head 0 votes for the majority class
        voting = present.clone()
        voting[unheard, 0] = True
        logits[unheard, 0] = fallback_logits(int(unheard.sum()), logits.shape[2], fallback, logits.device)
        return Votes(logits, voting)


BASELINES: dict[str, type] = {"local": Local, "concatenation": Concatenation, "laser": LaserVFL}
"""The baselines by the name their specification gives."""


def baseline_spec(baseline: Any) -> dict[str, Any]:
    """JSON-ready: the baseline's name and its fields (:func:`baseline_from_spec` rebuilds it)."""
    name = next(key for key, kind in BASELINES.items() if isinstance(baseline, kind))
    return {"name": name, **asdict(baseline)}


def baseline_from_spec(spec: dict[str, Any]) -> Local | Concatenation | LaserVFL:
    """The baseline :func:`baseline_spec` described."""
    fields = {key: value for key, value in spec.items() if key != "name"}
    baseline: Local | Concatenation | LaserVFL = BASELINES[spec["name"]](**fields)
    return baseline


def laser_weight(observed: Tensor, size: int) -> Tensor:
    """``C(|O| - 1, s - 1) / s``: the weight of one drawn subset of size ``s`` containing a given party.

    Examples
    --------
    >>> laser_weight(torch.tensor([3, 4]), 2).tolist()
    [1.0, 1.5]
    """
    weights = [math.comb(int(o) - 1, size - 1) / size for o in observed]
    return torch.tensor(weights, dtype=torch.float32, device=observed.device)


def sample_subsets(
    present: Tensor, party: int, size: int, generator: torch.Generator, *, shared: bool = False
) -> Tensor:
    """For each row, a uniform subset of its present parties of ``size`` that contains ``party``.

    The subset is ``party`` and the ``size - 1`` other present parties with
    the smallest random keys; with ``shared`` every row uses the same keys
    (one ranking of the parties per call), so rows with the same present
    parties get the same subset.

    Parameters
    ----------
    present : Tensor
        bool ``(n, K)``; ``party`` present in every row and at least ``size`` parties present.
    party : int
        The party every subset contains.
    size : int
        Subset size.
    generator : torch.Generator
        Source of randomness.
    shared : bool, default False
        One ranking for every row.

    Returns
    -------
    Tensor
        bool ``(n, K)``.

    Examples
    --------
    >>> subsets = sample_subsets(torch.ones(3, 4, dtype=torch.bool), 0, 2, torch.Generator().manual_seed(0), shared=True)
    >>> bool((subsets == subsets[0]).all()), subsets.sum(1).tolist()
    (True, [2, 2, 2])
    """
    keys = torch.rand((1, present.shape[1]) if shared else present.shape, generator=generator)
    keys = keys.to(present.device).expand(present.shape)
    candidates = present.clone()
    candidates[:, party] = False
    keys = torch.where(candidates, keys, math.inf)
    chosen = keys.argsort(dim=1)[:, : size - 1]
    subset = torch.zeros_like(present)
    subset.scatter_(1, chosen, True)
    subset[:, party] = True
    return subset
