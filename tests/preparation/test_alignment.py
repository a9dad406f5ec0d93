"""Private row alignment: each side learns the intersection it needs, no message carries an ID."""

import hashlib

import numpy as np

from fedmosaic.federation import Message
from fedmosaic.preparation.alignment import align

ACTIVE = [f"patient-{n}" for n in ("ann", "bob", "cid", "dee", "eve", "fay")]
PASSIVE = [
    [f"patient-{n}" for n in names]
    for names in (("fay", "zed", "bob", "yan"), ("xia", "wes"), ("dee", "ann", "eve", "cid", "bob", "fay", "vic"))
]


def _recorder() -> tuple[list[Message], object]:
    seen: list[Message] = []
    return seen, lambda rnd, client, direction, message: seen.append(message)


def _forms(identifier: str) -> list[bytes]:
    """What another party could match an ID against: the ID and its unkeyed hashes."""
    raw = identifier.encode()
    return (
        [raw]
        + [h(raw).digest() for h in (hashlib.sha256, hashlib.sha1, hashlib.md5)]
        + [h(raw).hexdigest().encode() for h in (hashlib.sha256, hashlib.sha1, hashlib.md5)]
    )


def message_bytes(message: Message) -> bytes:
    """Everything a message carries, as bytes: array buffers, config and metrics as text."""
    parts = [np.ascontiguousarray(a).tobytes() for a in message.arrays.values()]
    parts += [repr(sorted(message.config.items())).encode(), repr(sorted(message.metrics.items())).encode()]
    return b"\0".join(parts)


def test_the_active_party_learns_which_rows_each_passive_party_holds() -> None:
    # Execute
    present, _ = align(ACTIVE, PASSIVE, seed=0)
    # Assert
    expected = np.array([[True] + [a in p for p in PASSIVE] for a in ACTIVE])
    assert (present == expected).all()


def test_a_passive_party_learns_its_own_rows_in_common_and_their_positions_only() -> None:
    # Execute
    _, served = align(ACTIVE, PASSIVE, seed=0)
    # Assert
    for ids, (rows, positions) in zip(PASSIVE, served, strict=True):
        common = sorted(set(ids) & set(ACTIVE))
        assert [ids[r] for r in rows] == common
        assert [ACTIVE[p] for p in positions] == common


def test_no_message_carries_an_id_or_an_unkeyed_hash_of_one() -> None:
    # Prepare
    seen, observer = _recorder()
    # Execute
    align(ACTIVE, PASSIVE, seed=0, observer=observer)
    # Assert
    assert len(seen) == 4 * len(PASSIVE)  # two exchanges, down and up, per passive party
    carried = b"\1".join(message_bytes(m) for m in seen)
    for identifier in {*ACTIVE, *(i for ids in PASSIVE for i in ids)}:
        assert not any(form in carried for form in _forms(identifier)), identifier
