"""The server side of secure aggregation: the weighted sums of a round's updates, and nothing of any one."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from fedmosaic.federation.aggregate import cast_to_dtype
from fedmosaic.federation.message import ConfigValue, Message
from fedmosaic.federation.privacy import GaussianMechanism
from fedmosaic.federation.robust import Aggregator, Mean
from fedmosaic.federation.round import QuorumNotMet
from fedmosaic.federation.secagg.crypto import agreed_keys, as_bytes, is_public_key, join_shares, mask
from fedmosaic.federation.secagg.encoding import Layout, decode
from fedmosaic.federation.secagg.protocol import (
    CLIP_RANGE,
    COUNTED,
    DROPPED,
    KEY_SHARE,
    KEYS,
    LAYOUT,
    MASK_KEY,
    MASKED,
    MODULE_BOUND,
    PEERS,
    SEED_SHARE,
    SHARE,
    SHARE_KEY,
    SHARES,
    THRESHOLD,
    UNMASK,
    UPLOADED,
    addressed,
    without_protocol,
)
from fedmosaic.federation.validation import ArraySpec, Check, ReplySpec

if TYPE_CHECKING:
    from fedmosaic.federation.round import RoundContext

BYTES = ArraySpec((None,), "uint8")


@dataclass(frozen=True)
class SecureAggregation:
    """Runs a round's upload through secure aggregation (SecAgg, every pair of clients as neighbours).

    The server learns, for each array the round averages, the weighted sum
    of the updates over the clients that uploaded it and their total weight,
    and from those the weighted mean (for an array summed without weights,
    its sum and the number of clients); it sees no client's update, nor
    which arrays a client uploaded. Clients that drop out at any step, down to
    ``threshold`` of those sampled, leave the round to the others; with
    fewer, the round is skipped (:class:`~fedmosaic.federation.round.QuorumNotMet`)
    with the step and the counts as its reason.

    Parameters
    ----------
    threshold : float, default 0.66
        Share of the round's sampled clients needed at every step (rounded
        up, at least 2); it is also the Shamir threshold, so fewer than that
        many colluding clients learn nothing of another's update.
    clip_range : float, default 64.0
        Each update coordinate is clipped to ``[-clip_range, clip_range]``
        and encoded in steps of ``clip_range / 2^31``
        (:mod:`~fedmosaic.federation.secagg.encoding`).
    """

    threshold: float = 0.66
    clip_range: float = 64.0

    def __post_init__(self) -> None:
        if not 0 < self.threshold <= 1:
            raise ValueError(f"threshold must be in (0, 1], got {self.threshold}")
        if not self.clip_range > 0:
            raise ValueError(f"clip_range must be > 0, got {self.clip_range}")

    def needed(self, sampled: int) -> int:
        """Clients needed at every step of a round that sampled ``sampled``.

        Examples
        --------
        >>> SecureAggregation().needed(5), SecureAggregation(threshold=0.1).needed(5)
        (4, 2)
        """
        return max(2, math.ceil(self.threshold * sampled - 1e-9))

    def run(
        self,
        ctx: RoundContext,
        messages: Mapping[int, Message],
        expect: ReplySpec | Mapping[int, ReplySpec],
        reference: Mapping[str, np.ndarray],
        rng: np.random.Generator,
        summed: Mapping[str, np.ndarray] | None = None,
    ) -> tuple[dict[str, np.ndarray], dict[int, Message]]:
        """Send the method's ``messages`` as the masked upload of a secure round.

        With the round's rule a :class:`~fedmosaic.federation.privacy.GaussianMechanism`,
        the clients clip their updates module by module to its bound and
        weigh them 1, and the server adds its noise, drawn from ``rng``, to
        each sum: client-level DP on what the server releases (the server
        itself sees the sum before the noise).

        Parameters
        ----------
        summed : mapping of str to ndarray or None
            Further arrays of the replies, given by their shape, that are
            summed as they are, each upload weighed 1 (SCAFFOLD's control
            variate changes), in the same masked vector; neither clipped nor
            noised.

        Returns
        -------
        dict of str to ndarray
            The weighted mean of each array of ``reference`` uploaded by at
            least one client (with the Gaussian mechanism: the noised mean of
            the clipped updates), and the float64 sum of each array of
            ``summed`` uploaded by at least one client.
        dict of int to Message
            The uploaders' replies without the averaged and summed arrays
            (metrics and any other arrays, which stay in the clear).
        """
        mechanism = _mechanism(ctx.aggregator)
        summed = summed or {}
        layout = Layout.of({**reference, **summed})
        needed = self.needed(len(messages))
        sampled = len(messages)
        keys = _step(
            ctx,
            "sent keys",
            needed,
            sampled,
            {c: Message(kind=KEYS, config={THRESHOLD: needed}) for c in messages},
            ReplySpec(arrays={SHARE_KEY: BYTES, MASK_KEY: BYTES}, kind=KEYS, checks=(_unreadable_key,)),
        )
        published = {addressed(name, c): keys[c].arrays[name] for c in keys for name in (SHARE_KEY, MASK_KEY)}
        shared = _step(
            ctx,
            "shared keys",
            needed,
            sampled,
            {c: Message(kind=SHARES, arrays=published) for c in keys},
            {p: ReplySpec(arrays={addressed(SHARE, c): BYTES for c in keys if c != p}, kind=SHARES) for p in keys},
        )
        peers = sorted(shared)
        protocol: dict[str, ConfigValue] = {LAYOUT: layout.to_text(), CLIP_RANGE: self.clip_range, PEERS: peers}
        if mechanism is not None:
            protocol[MODULE_BOUND] = mechanism.module_bound(reference)
        if summed:
            protocol[COUNTED] = sorted(summed)
        uploads = _step(
            ctx,
            "sent masked updates",
            needed,
            sampled,
            {
                c: Message(
                    arrays={
                        **messages[c].arrays,
                        **{addressed(SHARE, p): shared[p].arrays[addressed(SHARE, c)] for p in peers if p != c},
                    },
                    config={**messages[c].config, **protocol},
                    metrics=dict(messages[c].metrics),
                    kind=messages[c].kind,
                )
                for c in peers
            },
            {c: _masked_spec(expect if isinstance(expect, ReplySpec) else expect[c], layout) for c in peers},
            quorum=True,
        )
        uploaded = sorted(uploads)
        dropped = [c for c in peers if c not in uploads]
        unmasked = _step(
            ctx,
            "sent their shares",
            needed,
            sampled,
            {c: Message(kind=UNMASK, config={UPLOADED: uploaded, DROPPED: dropped}) for c in uploaded},
            ReplySpec(
                optional_arrays={
                    **{addressed(SEED_SHARE, c): BYTES for c in uploaded},
                    **{addressed(KEY_SHARE, c): BYTES for c in dropped},
                },
                kind=UNMASK,
            ),
        )
        total = sum((u.arrays[MASKED] for u in uploads.values()), start=np.zeros(layout.size, np.uint64))
        for client in uploaded:
            total -= mask(_rebuilt(unmasked, SEED_SHARE, client, needed), layout.size)
        for client in dropped:
            private = _rebuilt(unmasked, KEY_SHARE, client, needed)
            agreed = agreed_keys(private, [as_bytes(keys[peer].arrays[MASK_KEY]) for peer in uploaded])
            for peer, key in zip(uploaded, agreed, strict=True):
                pairwise = mask(key, layout.size)
                total = total - pairwise if peer < client else total + pairwise
        sums, weights = decode(layout, total, self.clip_range)
        uploaded_by = {name: weight for name, weight in weights.items() if weight > 0}
        if mechanism is not None and mechanism.adds_noise:
            std = mechanism.noise_multiplier * mechanism.clip_norm
            for name in uploaded_by:
                if name in reference and reference[name].dtype.kind == "f":
                    sums[name] = sums[name] + rng.normal(0.0, std, size=sums[name].shape)
        means = {
            name: cast_to_dtype(np.asarray(reference[name], np.float64) + sums[name] / weight, reference[name].dtype)
            for name, weight in uploaded_by.items()
            if name in reference
        }
        totals = {name: sums[name] for name in uploaded_by if name in summed}
        return {**means, **totals}, {c: without_protocol(uploads[c]) for c in uploaded}


def _unreadable_key(reply: Message) -> str | None:
    """Why a client's public keys cannot be used, or None."""
    bad = [name for name in (SHARE_KEY, MASK_KEY) if not is_public_key(as_bytes(reply.arrays[name]))]
    return f"{bad[0]} is not a public key" if bad else None


def _mechanism(rule: Aggregator) -> GaussianMechanism | None:
    """The Gaussian mechanism the round aggregates with, None for the mean; any other rule needs each update."""
    if isinstance(rule, GaussianMechanism):
        return rule
    if not isinstance(rule, Mean):
        raise ValueError(
            f"secure aggregation combines by the mean or the Gaussian mechanism, not {type(rule).__name__}"
        )
    return None


def _step(
    ctx: RoundContext,
    done: str,
    needed: int,
    sampled: int,
    messages: dict[int, Message],
    expect: ReplySpec | Mapping[int, ReplySpec],
    *,
    quorum: bool = False,
) -> dict[int, Message]:
    replies = ctx.exchange(messages, quorum=quorum, expect=expect)
    if len(replies) < needed:
        raise QuorumNotMet(
            f"secure aggregation: {len(replies)} of {sampled} sampled clients {done}, fewer than the threshold {needed}"
        )
    return replies


def _rebuilt(replies: Mapping[int, Message], kind: str, owner: int, needed: int) -> bytes:
    shares = [
        as_bytes(r.arrays[addressed(kind, owner)]) for r in replies.values() if addressed(kind, owner) in r.arrays
    ]
    if len(shares) < needed:
        raise QuorumNotMet(
            f"secure aggregation: {len(shares)} shares of client {owner}, fewer than the threshold {needed}"
        )
    return join_shares(shares[:needed])


def _masked_spec(expect: ReplySpec, layout: Layout) -> ReplySpec:
    """The method's spec for a masked reply: the averaged arrays replaced by the masked vector."""
    averaged = set(layout.names)
    others = {n: s for n, s in expect.arrays.items() if n not in averaged}
    return replace(
        expect,
        arrays={MASKED: ArraySpec((layout.size,), "uint64"), **({} if expect.partial else others)},
        optional_arrays={**expect.optional_arrays, **(others if expect.partial else {})},
        partial=False,
        checks=tuple(_unmasked(check) for check in expect.checks),
    )


def _unmasked(check: Check) -> Check:
    """``check`` applied to a reply without the protocol's arrays (as the method would see it)."""
    return lambda reply: check(without_protocol(reply))
