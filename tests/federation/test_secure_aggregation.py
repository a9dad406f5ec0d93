"""Secure aggregation: the server gets the weighted mean of the updates and no single update.

The rounds use the toy averaging client of ``conftest.py``, wrapped in
:class:`SecureClient`, over the in-process grid.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pytest

from fedmosaic.federation import (
    ClientContext,
    ClientLogic,
    ClientState,
    Grid,
    InProcessGrid,
    Message,
    QuorumNotMet,
    ReplySpec,
    RoundContext,
    Schedule,
    weighted_average,
)
from fedmosaic.federation.privacy import GaussianMechanism
from fedmosaic.federation.robust import Aggregator
from fedmosaic.federation.secagg import SecureAggregation, SecureClient
from fedmosaic.federation.secagg.encoding import STEPS
from fedmosaic.federation.secagg.protocol import KEYS, MASK_KEY, MASKED, PREFIX, SHARE_KEY, SHARES, UNMASK

SECURE = SecureAggregation(threshold=0.6, clip_range=8.0)
TOLERANCE = SECURE.clip_range / STEPS
"""Half a fixed-point step of each of two roundings, at most."""
REFERENCE = {"w": np.array([0.5, -1.0, 2.0]), "b": np.array([0.25])}


class PartialClient(ClientLogic):
    """Uploads ``w`` moved by its id, and ``b`` only when its id is even; its weight is ``10 * (id + 1)``."""

    def handle(self, message: Message, state: ClientState, context: ClientContext) -> Message:
        moved = {"w": message.arrays["w"] + 0.1 * (context.client_id + 1)}
        if context.client_id % 2 == 0:
            moved["b"] = message.arrays["b"] - 0.3 * context.client_id
        return Message(arrays=moved, metrics={"num_examples": 10.0 * (context.client_id + 1)})


class ChangingClient(PartialClient):
    """:class:`PartialClient` that also reports a change ``delta`` it was not sent, ``id + 1`` (as SCAFFOLD's)."""

    def handle(self, message: Message, state: ClientState, context: ClientContext) -> Message:
        reply = super().handle(message, state, context)
        reply.arrays["delta"] = np.full(2, context.client_id + 1.0)
        return reply


class StageFailures(Grid):
    """Forwards to a grid; the clients of ``failing`` never answer messages of the kinds in ``kinds``."""

    def __init__(self, inner: Grid, failing: frozenset[int], kinds: frozenset[str]) -> None:
        self.inner = inner
        self.failing = failing
        self.kinds = kinds
        self.seen: list[Message] = []

    def send_and_receive(
        self, messages: Mapping[int, Message], rnd: int, failing: frozenset[int]
    ) -> dict[int, Message]:
        lost = {c for c, m in messages.items() if m.kind in self.kinds} & self.failing
        replies = self.inner.send_and_receive(messages, rnd, failing | lost)
        self.seen.extend(replies.values())
        return replies


def _round(grid: Grid, clients: list[int], secure: SecureAggregation | None = SECURE) -> RoundContext:
    return RoundContext(round=1, clients=clients, seed=0, grid=grid, secure=secure)


def _grid(failing: frozenset[int] = frozenset(), kinds: frozenset[str] = frozenset()) -> StageFailures:
    return StageFailures(InProcessGrid(lambda c: SecureClient(PartialClient()), seed=0), failing, kinds)


def _plain_mean(clients: list[int]) -> dict[str, np.ndarray]:
    replies = {
        c: PartialClient().handle(Message(arrays=REFERENCE), ClientState(), ClientContext(c, 1, 0)) for c in clients
    }
    return weighted_average([(r.arrays, r.metrics["num_examples"]) for r in replies.values()])


def _secure_mean(
    grid: Grid, clients: list[int], rule: Aggregator | None = None
) -> tuple[dict[str, np.ndarray], dict[int, Message]]:
    spec = ReplySpec.like(REFERENCE, metrics={"num_examples"}, partial=True)
    ctx = _round(grid, clients)
    ctx.aggregator = rule or ctx.aggregator
    return ctx.exchange_aggregated(dict.fromkeys(clients, Message(arrays=REFERENCE)), expect=spec, reference=REFERENCE)


@pytest.mark.parametrize("clients", [[0, 1, 2], [0, 1, 2, 3, 4]])
def test_the_server_gets_each_arrays_weighted_mean_over_the_clients_holding_it(clients: list[int]) -> None:
    # Prepare
    grid = _grid()

    # Execute
    means, replies = _secure_mean(grid, clients)

    # Assert
    expected = _plain_mean(clients)
    assert sorted(means) == ["b", "w"]
    for name in expected:
        np.testing.assert_allclose(means[name], expected[name], atol=TOLERANCE, rtol=0)
    assert all(not r.arrays for r in replies.values())
    assert [r.metrics["num_examples"] for r in replies.values()] == [10.0 * (c + 1) for c in clients]


@pytest.mark.parametrize("secure", [SECURE, None], ids=["secure", "plain"])
def test_summed_arrays_get_their_unweighted_sum_beside_the_weighted_means(secure: SecureAggregation | None) -> None:
    # Prepare
    clients = [0, 1, 2]
    client = ChangingClient()
    grid = InProcessGrid(lambda c: client if secure is None else SecureClient(client), seed=0)
    summed = {"delta": np.zeros(2)}
    spec = ReplySpec.like({**REFERENCE, **summed}, metrics={"num_examples"}, partial=True)
    ctx = _round(grid, clients, secure)

    # Execute
    combined, replies = ctx.exchange_aggregated(
        dict.fromkeys(clients, Message(arrays=REFERENCE)), expect=spec, reference=REFERENCE, summed=summed
    )

    # Assert
    np.testing.assert_allclose(combined.pop("delta"), [6.0, 6.0], atol=TOLERANCE, rtol=0)
    expected = _plain_mean(clients)
    assert sorted(combined) == sorted(expected)
    for name in expected:
        np.testing.assert_allclose(combined[name], expected[name], atol=TOLERANCE, rtol=0)
    assert all(not r.arrays for r in replies.values()) == (secure is not None)


def test_with_client_level_dp_the_clients_clip_and_the_server_noises_the_sum() -> None:
    # Prepare: the Gaussian mechanism's clipped, unweighted mean as the plain server computes it
    clients = [0, 1, 2, 3]
    replies = [
        PartialClient().handle(Message(arrays=REFERENCE), ClientState(), ClientContext(c, 1, 0)) for c in clients
    ]
    expected = GaussianMechanism(0.2, 0.0).aggregate([(r.arrays, 1.0) for r in replies], REFERENCE, None)

    # Execute
    clipped, _ = _secure_mean(_grid(), clients, GaussianMechanism(0.2, 0.0))
    noised, _ = _secure_mean(_grid(), clients, GaussianMechanism(0.2, 1.0))

    # Assert
    for name in expected:
        np.testing.assert_allclose(clipped[name], expected[name], atol=TOLERANCE, rtol=0)
        assert not np.allclose(noised[name], expected[name], atol=1e-3)


def test_no_upload_holds_a_clients_update_in_the_clear() -> None:
    # Prepare
    grid = _grid()

    # Execute
    _secure_mean(grid, [0, 1, 2, 3])

    # Assert
    uploads = [m for m in grid.seen if MASKED in m.arrays]
    assert len(uploads) == 4
    assert all(set(m.arrays) == {MASKED} for m in uploads)
    plain = {float(v) for c in range(4) for v in REFERENCE["w"] + 0.1 * (c + 1)}
    assert not any(plain & {float(v) for v in m.arrays[MASKED].view(np.int64)} for m in uploads)


@pytest.mark.parametrize(
    "kinds",
    [frozenset({KEYS}), frozenset({SHARES}), frozenset({"train"}), frozenset({UNMASK})],
    ids=["before keys", "after keys", "after sharing", "after uploading"],
)
def test_a_client_dropping_at_any_step_leaves_the_mean_of_the_others(kinds: frozenset[str]) -> None:
    # Prepare
    grid = _grid(failing=frozenset({1}), kinds=kinds)
    uploaded = [0, 1, 2, 3, 4] if kinds == {UNMASK} else [0, 2, 3, 4]

    # Execute
    means, replies = _secure_mean(grid, [0, 1, 2, 3, 4])

    # Assert
    assert sorted(replies) == uploaded
    expected = _plain_mean(uploaded)
    for name in expected:
        np.testing.assert_allclose(means[name], expected[name], atol=TOLERANCE, rtol=0)


def test_fewer_clients_than_the_threshold_skip_the_round_saying_at_which_step() -> None:
    # Prepare
    grid = _grid(failing=frozenset({1, 2, 3}), kinds=frozenset({"train"}))

    # Execute
    with pytest.raises(QuorumNotMet) as raised:
        _secure_mean(grid, [0, 1, 2, 3, 4])

    # Assert
    assert str(raised.value) == (
        "secure aggregation: 2 of 5 sampled clients sent masked updates, fewer than the threshold 3"
    )


def test_the_clients_keep_no_secret_of_the_protocol_after_the_round() -> None:
    # Prepare
    inner = InProcessGrid(lambda c: SecureClient(PartialClient()), seed=0)

    # Execute
    _secure_mean(inner, [0, 1, 2])

    # Assert
    states = inner.client_states()
    assert sorted(states) == [0, 1, 2]
    assert not any(n.startswith(PREFIX) for s in states.values() for n in [*s.arrays, *s.config])


def test_a_round_skipped_for_dropouts_resumes_after_a_kill_exactly_like_an_uninterrupted_run(
    make_toy, simulated_kill, tmp_path: Path
) -> None:
    # Prepare: 2 of 4 clients fail in round 2, beyond the threshold 3; a run killed inside round 3.
    schedule = Schedule(num_clients=4, failures={2: frozenset({0, 3})})
    secure = SecureAggregation(threshold=0.75)
    reference = make_toy(seed=3, rounds=4, schedule=schedule, secure=secure)
    expected = reference.federation.run()
    path = tmp_path / "checkpoint.npz"
    with pytest.raises(simulated_kill):
        make_toy(seed=3, rounds=4, schedule=schedule, secure=secure, checkpoint=path, crash_at=3).federation.run()

    # Execute: a fresh server and grid resume from the checkpoint
    resumed = make_toy(seed=3, rounds=4, schedule=schedule, secure=secure, checkpoint=path)
    history = resumed.federation.run(resume=True)

    # Assert
    assert [r.status for r in history] == ["ok", "skipped", "ok", "ok"]
    assert history[1].reason == "secure aggregation: 2 of 4 sampled clients sent keys, fewer than the threshold 3"
    assert [{**r.to_dict(), "wall_time_s": 0} for r in history] == [{**r.to_dict(), "wall_time_s": 0} for r in expected]
    np.testing.assert_array_equal(resumed.server.w, reference.server.w)


class ForgedKeys(ClientLogic):
    """A broken client: its public keys are not keys."""

    def handle(self, message: Message, state: ClientState, context: ClientContext) -> Message:
        return Message(arrays={SHARE_KEY: np.zeros(4, np.uint8), MASK_KEY: np.zeros(4, np.uint8)}, kind=KEYS)


def test_a_client_with_unreadable_keys_is_rejected_and_the_others_sum() -> None:
    # Prepare
    grid = StageFailures(
        InProcessGrid(lambda c: ForgedKeys() if c == 2 else SecureClient(PartialClient()), seed=0),
        frozenset(),
        frozenset(),
    )

    # Execute
    means, replies = _secure_mean(grid, [0, 1, 2, 3])

    # Assert
    assert sorted(replies) == [0, 1, 3]
    expected = _plain_mean([0, 1, 3])
    for name in expected:
        np.testing.assert_allclose(means[name], expected[name], atol=TOLERANCE, rtol=0)
