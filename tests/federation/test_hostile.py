"""Simulated hostile clients: each attack alters exactly what it says, only for the hostile clients."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pytest

from fedmosaic.federation import Grid, HostileGrid, Message, hostile_clients

SENT = Message(arrays={"l.w": np.ones(3, np.float32)})


class Honest(Grid):
    """Every client moves ``l.w`` by +1 and reports a confidence matrix."""

    def send_and_receive(
        self, messages: Mapping[int, Message], rnd: int, failing: frozenset[int]
    ) -> dict[int, Message]:
        confidence = np.array([[0.0, 0.8], [0.1, 0.0]])
        return {
            c: Message(arrays={"l.w": m.arrays["l.w"] + 1, "confidence": confidence}, metrics={"num_examples": 5.0})
            for c, m in messages.items()
        }


def _replies(attack: str, max_bytes: int = 1000) -> dict[int, Message]:
    grid = HostileGrid(Honest(), frozenset({1}), attack, seed=0, max_bytes=max_bytes)
    return grid.send_and_receive({0: SENT, 1: SENT}, 1, frozenset())


@pytest.mark.parametrize(("attack", "expected"), [("sign-flip", [0.0] * 3), ("scale", [101.0] * 3)])
def test_update_attacks_reverse_or_scale_the_update_of_hostile_clients_only(attack: str, expected: list[float]) -> None:
    replies = _replies(attack)
    np.testing.assert_allclose(replies[1].arrays["l.w"], expected)
    np.testing.assert_allclose(replies[0].arrays["l.w"], [2.0] * 3)


def test_graph_attacks_reverse_or_randomize_the_confidence_matrix() -> None:
    reversed_ = _replies("reversed-graph")[1].arrays["confidence"]
    np.testing.assert_allclose(reversed_, [[0.0, 0.1], [0.8, 0.0]])
    randomized = _replies("random-graph")[1].arrays["confidence"]
    assert randomized[0, 1] + randomized[1, 0] <= 1
    assert np.trace(randomized) == 0
    assert not np.allclose(randomized, [[0.0, 0.8], [0.1, 0.0]])


@pytest.mark.parametrize(
    ("attack", "check"),
    [
        ("nan", lambda r: np.isnan(r.arrays["l.w"]).any()),
        ("inf", lambda r: np.isinf(r.arrays["l.w"]).any()),
        ("wrong-shape", lambda r: r.arrays["l.w"].shape == (4,)),
        ("unknown-name", lambda r: "injected" in r.arrays),
        ("oversized", lambda r: r.nbytes() > 1000),
    ],
)
def test_malformed_attacks_break_the_reply_as_named(attack: str, check) -> None:
    assert check(_replies(attack)[1])


def test_hostile_clients_are_a_seeded_share() -> None:
    assert hostile_clients(20, 0.3, 1) == hostile_clients(20, 0.3, 1)
    assert len(hostile_clients(20, 0.45, 1)) == 9
    with pytest.raises(ValueError, match="attack must be one of"):
        HostileGrid(Honest(), frozenset(), "gentle", seed=0)
