"""The client side of secure aggregation: a wrapper around any method's client logic."""

from __future__ import annotations

import numpy as np
from flwr.common.secure_aggregation.secaggplus_utils import (
    share_keys_plaintext_concat,
    share_keys_plaintext_separate,
)
from typing_extensions import override

from fedmosaic.federation.logic import ClientContext, ClientLogic
from fedmosaic.federation.message import Message, as_float, as_int
from fedmosaic.federation.robust import clip_update
from fedmosaic.federation.secagg.crypto import (
    agreed_keys,
    as_array,
    as_bytes,
    mask,
    new_key_pair,
    new_seed,
    seal,
    split_secret,
    unseal,
)
from fedmosaic.federation.secagg.encoding import Layout, encode
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
    PREFIX,
    SEED_SHARE,
    SHARE,
    SHARE_KEY,
    SHARES,
    THRESHOLD,
    UNMASK,
    UPLOADED,
    addressed,
    clients_of,
    names_of,
    without_protocol,
)
from fedmosaic.federation.state import ClientState
from fedmosaic.federation.validation import NUM_EXAMPLES

PRIVATE = PREFIX + "private."
"""State entries the client never sends: its private keys and its self-mask seed."""
SEED = PRIVATE + "seed"


class SecureClient(ClientLogic):
    """Answers the protocol's messages and masks the wrapped client's upload.

    Messages that are not part of the protocol go to the wrapped client
    unchanged. What the client keeps between the exchanges of a round (its
    private keys, the others' public keys, the shares it received) lives in
    its :class:`ClientState` under ``secagg.`` names, hidden from the wrapped
    client, and is deleted once used: private keys and the seed after the
    masked upload, the shares after the unmasking.

    Parameters
    ----------
    logic : ClientLogic
        The method's client.
    """

    def __init__(self, logic: ClientLogic) -> None:
        self._logic = logic

    @override
    def handle(self, message: Message, state: ClientState, context: ClientContext) -> Message:
        if message.kind == KEYS:
            return self._keys(message, state)
        if message.kind == SHARES:
            return self._shares(message, state, context.client_id)
        if message.kind == UNMASK:
            return self._unmask(message, state)
        if LAYOUT in message.config:
            return self._masked(message, state, context)
        return self._wrapped(message, state, context)

    @override
    def exported_part(self, state: ClientState) -> dict[str, np.ndarray] | None:
        return self._logic.exported_part(state)

    def _keys(self, message: Message, state: ClientState) -> Message:
        _forget(state)
        share_private, share_public = new_key_pair()
        mask_private, mask_public = new_key_pair()
        state.arrays[PRIVATE + SHARE_KEY] = as_array(share_private)
        state.arrays[PRIVATE + MASK_KEY] = as_array(mask_private)
        state.config[THRESHOLD] = as_int(message.config[THRESHOLD])
        return Message(kind=KEYS, arrays={SHARE_KEY: as_array(share_public), MASK_KEY: as_array(mask_public)})

    def _shares(self, message: Message, state: ClientState, me: int) -> Message:
        peers = sorted(int(name.rsplit(".", 1)[1]) for name in message.arrays if name.startswith(SHARE_KEY + "."))
        threshold = as_int(state.config[THRESHOLD])
        seed = new_seed()
        seed_shares = split_secret(seed, threshold, len(peers))
        key_shares = split_secret(as_bytes(state.arrays[PRIVATE + MASK_KEY]), threshold, len(peers))
        share_private = as_bytes(state.arrays[PRIVATE + SHARE_KEY])
        state.arrays[SEED] = as_array(seed)
        others = [peer for peer in peers if peer != me]
        keys = agreed_keys(share_private, [as_bytes(message.arrays[addressed(SHARE_KEY, p)]) for p in others])
        sealed = {}
        for peer, seed_share, key_share in zip(peers, seed_shares, key_shares, strict=True):
            for name in (SHARE_KEY, MASK_KEY):
                state.arrays[addressed(name, peer)] = np.array(message.arrays[addressed(name, peer)], dtype=np.uint8)
            if peer == me:
                _keep_shares(state, me, seed_share, key_share)
                continue
            plaintext = share_keys_plaintext_concat(me, peer, seed_share, key_share)
            sealed[addressed(SHARE, peer)] = as_array(seal(keys[others.index(peer)], plaintext))
        return Message(kind=SHARES, arrays=sealed)

    def _masked(self, message: Message, state: ClientState, context: ClientContext) -> Message:
        me = context.client_id
        others = [peer for peer in clients_of(message.config[PEERS]) if peer != me]
        keys = agreed_keys(
            as_bytes(state.arrays[PRIVATE + SHARE_KEY]),
            [as_bytes(state.arrays[addressed(SHARE_KEY, p)]) for p in others],
        )
        for peer, key in zip(others, keys, strict=True):
            source, target, seed_share, key_share = share_keys_plaintext_separate(
                unseal(key, as_bytes(message.arrays[addressed(SHARE, peer)]))
            )
            if (source, target) != (peer, me):
                raise ValueError(f"share from client {peer} is addressed from {source} to {target}")
            _keep_shares(state, peer, seed_share, key_share)
        sent = without_protocol(message)
        reply = self._wrapped(sent, state, context)
        layout = Layout.from_text(str(message.config[LAYOUT]))
        counted = set(names_of(message.config[COUNTED])) if COUNTED in message.config else set()
        uploaded = {name: reply.arrays[name] for name in layout.names if name in reply.arrays and name not in counted}
        received = {name: _received(sent, name) for name in uploaded}
        weight = round(reply.metrics[NUM_EXAMPLES]) if uploaded else 0
        if MODULE_BOUND in message.config:  # client-level DP: bounded, unweighted updates
            uploaded = clip_update(uploaded, received, as_float(message.config[MODULE_BOUND]))
            weight = 1 if uploaded else 0
        updates = {
            name: np.asarray(array, np.float64) - np.asarray(received[name], np.float64)
            for name, array in uploaded.items()
        }
        clip_range = as_float(message.config[CLIP_RANGE])
        counts = {name: reply.arrays[name] for name in counted if name in reply.arrays}
        vector = encode(layout, updates, weight, clip_range) + encode(layout, counts, 1, clip_range)
        vector += mask(as_bytes(state.arrays[SEED]), layout.size)
        keys = agreed_keys(
            as_bytes(state.arrays[PRIVATE + MASK_KEY]), [as_bytes(state.arrays[addressed(MASK_KEY, p)]) for p in others]
        )
        for peer, key in zip(others, keys, strict=True):
            pairwise = mask(key, layout.size)
            vector = vector + pairwise if me < peer else vector - pairwise
        for name in [n for n in state.arrays if n.startswith(PRIVATE)]:
            del state.arrays[name]
        clear = {name: array for name, array in reply.arrays.items() if name not in layout.names}
        return Message(arrays={**clear, MASKED: vector}, config=reply.config, metrics=reply.metrics, kind=reply.kind)

    def _unmask(self, message: Message, state: ClientState) -> Message:
        uploaded = clients_of(message.config[UPLOADED])
        dropped = clients_of(message.config[DROPPED])
        if set(uploaded) & set(dropped):
            raise ValueError("a client cannot be both uploaded and dropped: that would reveal its update")
        if len(uploaded) < as_int(state.config[THRESHOLD]):
            raise ValueError(f"{len(uploaded)} uploads are fewer than the threshold {state.config[THRESHOLD]}")
        wanted = [addressed(SEED_SHARE, c) for c in uploaded] + [addressed(KEY_SHARE, c) for c in dropped]
        arrays = {name: state.arrays[name] for name in wanted if name in state.arrays}
        _forget(state)
        return Message(kind=UNMASK, arrays=arrays)

    def _wrapped(self, message: Message, state: ClientState, context: ClientContext) -> Message:
        """The wrapped client's reply; it sees its state without the protocol's entries."""
        arrays = {n: state.arrays.pop(n) for n in [n for n in state.arrays if n.startswith(PREFIX)]}
        config = {k: state.config.pop(k) for k in [k for k in state.config if k.startswith(PREFIX)]}
        try:
            return self._logic.handle(message, state, context)
        finally:
            state.arrays.update(arrays)
            state.config.update(config)


def _keep_shares(state: ClientState, owner: int, seed_share: bytes, key_share: bytes) -> None:
    state.arrays[addressed(SEED_SHARE, owner)] = as_array(seed_share)
    state.arrays[addressed(KEY_SHARE, owner)] = as_array(key_share)


def _received(message: Message, name: str) -> np.ndarray:
    if name not in message.arrays:
        raise ValueError(f"the reply holds array {name!r}, which the client was not sent")
    return message.arrays[name]


def _forget(state: ClientState) -> None:
    """Delete every entry of the protocol from ``state``."""
    for name in [n for n in state.arrays if n.startswith(PREFIX)]:
        del state.arrays[name]
    for key in [k for k in state.config if k.startswith(PREFIX)]:
        del state.config[key]
