"""The names the secure-aggregation messages use, shared by the server and the client side.

A secure round adds three exchanges of its own to the method's upload
(Bonawitz et al., 2017, "Practical Secure Aggregation for
Privacy-Preserving Machine Learning", with every pair of clients as
neighbours):

1. ``query.secagg-keys``: each sampled client answers with two fresh public
   keys (one to encrypt shares, one to agree on masks);
2. ``query.secagg-shares``: the server relays every public key; each client
   answers with Shamir shares of its mask key and of a fresh self-mask
   seed, one encrypted share per other client;
3. the method's own message, with the shares addressed to the client and
   the round's :class:`~fedmosaic.federation.secagg.encoding.Layout`
   attached: the client trains, encodes its weighted update and answers
   with it masked (pairwise masks and its self-mask added);
4. ``query.secagg-unmask``: told who uploaded and who dropped, each client
   answers with its shares of the uploaders' self-mask seeds and of the
   dropped clients' mask keys, from which the server removes every mask
   and is left with the sum.
"""

from __future__ import annotations

from fedmosaic.federation.message import ConfigValue, Message

PREFIX = "secagg."
"""Prefix of every array and config entry the protocol adds to a message or a client state."""
KEYS = "query.secagg-keys"
"""Kind of step 1: the client answers with its public keys."""
SHARES = "query.secagg-shares"
"""Kind of step 2: the client answers with its encrypted shares."""
UNMASK = "query.secagg-unmask"
"""Kind of step 4: the client answers with the shares that remove the masks."""

THRESHOLD = PREFIX + "threshold"
"""Config: clients needed at every step (and Shamir's threshold)."""
LAYOUT = PREFIX + "layout"
"""Config: the names and shapes of the arrays summed (:class:`~fedmosaic.federation.secagg.encoding.Layout`)."""
CLIP_RANGE = PREFIX + "clip_range"
"""Config: the fixed-point encoding's range."""
COUNTED = PREFIX + "counted"
"""Config: the layout's arrays a client uploads as they are, weighed 1 (summed unweighted), rather than as updates."""
MODULE_BOUND = PREFIX + "module_bound"
"""Config, with client-level DP: clip each module's update to this L2 norm and weigh every upload 1."""
PEERS = PREFIX + "peers"
"""Config: the clients whose masks a client adds (those that shared their keys)."""
UPLOADED = PREFIX + "uploaded"
DROPPED = PREFIX + "dropped"
MASKED = PREFIX + "masked"
"""Array: a client's masked, encoded upload."""
SHARE_KEY = PREFIX + "share_key"
"""Array: the public key shares are encrypted under (``secagg.share_key.<client>``: that client's)."""
MASK_KEY = PREFIX + "mask_key"
"""Array: the public key pairwise masks are agreed with (``secagg.mask_key.<client>``: that client's)."""
SHARE = PREFIX + "share"
"""Arrays ``secagg.share.<client>``: an encrypted pair of shares, from or to that client."""
SEED_SHARE = PREFIX + "seed_share"
"""Arrays ``secagg.seed_share.<client>``: a share of that client's self-mask seed."""
KEY_SHARE = PREFIX + "key_share"
"""Arrays ``secagg.key_share.<client>``: a share of that client's private mask key."""


def addressed(prefix: str, client: int) -> str:
    """The name of an entry about ``client``: ``addressed("secagg.share", 3)`` is ``"secagg.share.3"``."""
    return f"{prefix}.{client}"


def without_protocol(message: Message) -> Message:
    """``message`` without the protocol's arrays and config: what the method sent or replied."""
    return Message(
        arrays={n: a for n, a in message.arrays.items() if not n.startswith(PREFIX)},
        config={k: v for k, v in message.config.items() if not k.startswith(PREFIX)},
        metrics=dict(message.metrics),
        kind=message.kind,
    )


def clients_of(values: ConfigValue) -> list[int]:
    """A config list of client ids as ints.

    Examples
    --------
    >>> clients_of([3, 1])
    [3, 1]
    """
    return [int(v) for v in _listed(values, "clients")]


def names_of(values: ConfigValue) -> list[str]:
    """A config list of array names as strs.

    Examples
    --------
    >>> names_of(["b", "a"])
    ['b', 'a']
    """
    return [str(v) for v in _listed(values, "names")]


def _listed(values: ConfigValue, what: str) -> list[int] | list[float] | list[str] | list[bool]:
    if not isinstance(values, list):
        raise TypeError(f"expected a list of {what}, got {type(values).__name__}")
    return values
