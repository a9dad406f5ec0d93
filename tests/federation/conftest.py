"""A tiny numpy-only method ("toy averaging") for the engine tests.

The server holds a global vector ``w``. Each client holds a private mean and
a number of examples; when it receives ``w`` it replies with ``w`` moved
toward its mean plus a little noise drawn from ``default_rng(context.seed)``.
Its step shrinks with the number of messages it has handled, a counter kept
in ``state.config["handled"]``, so the results depend on the client state
being kept (and checkpointed) correctly. The server takes the
``ctx.exchange_aggregated`` (the weighted mean by default, or secure aggregation) of the replies; ``evaluate`` reports the distance of
``w`` to the weighted mean of all private means.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from fedmosaic.federation import (
    ClientContext,
    ClientLogic,
    ClientState,
    Federation,
    Grid,
    InProcessGrid,
    Message,
    ReplySpec,
    RoundContext,
    Schedule,
    ServerLogic,
    derive_rng,
)
from fedmosaic.federation.secagg import SecureAggregation, SecureClient

DIM = 3
NOISE = 0.05


class SimulatedKill(RuntimeError):
    """Stands for the process being killed in the middle of a round."""


def client_mean(client_id: int) -> np.ndarray:
    """Private mean of a client: distinct per client, fixed."""
    return np.linspace(0.0, 1.0, DIM) + float(client_id)


def client_examples(client_id: int) -> int:
    """Number of training examples of a client."""
    return 10 * (client_id + 1)


class ToyClient(ClientLogic):
    """Moves the received ``w`` toward its private mean, with derived noise."""

    def __init__(self, client_id: int) -> None:
        self.mean = client_mean(client_id)
        self.num_examples = client_examples(client_id)

    def handle(self, message: Message, state: ClientState, context: ClientContext) -> Message:
        handled = int(state.config.get("handled", 0))
        step = 1.0 / (2.0 + handled)
        rng = np.random.default_rng(context.seed)
        w = message.arrays["w"]
        new = w + step * (self.mean - w) + rng.normal(0.0, NOISE, size=w.shape)
        state.config["handled"] = handled + 1
        state.arrays["last_reply"] = new.copy()
        return Message(
            arrays={"w": new},
            config={"handled": handled + 1},
            metrics={"num_examples": float(self.num_examples)},
        )


class ToyServer(ServerLogic):
    """Broadcasts ``w``, averages the replies weighted by ``num_examples``.

    Parameters
    ----------
    num_clients : int
        Clients of the federation (used for the evaluation target).
    crash_at : int or None
        Raise :class:`SimulatedKill` in this round, after the exchange.
    """

    def __init__(self, num_clients: int, crash_at: int | None = None) -> None:
        self.crash_at = crash_at
        weights = np.array([client_examples(c) for c in range(num_clients)], dtype=float)
        means = np.stack([client_mean(c) for c in range(num_clients)])
        self.target = weights @ means / weights.sum()
        self.w = np.zeros(DIM)
        self.aggregations = 0
        self.exchanges = 0
        self.last_repliers: list[int] = []
        self.evaluated_rounds: list[int] = []

    def initialize(self, seed: int) -> None:
        self.w = derive_rng(seed, "init").normal(size=DIM)
        self.aggregations = 0
        self.exchanges = 0

    def run_round(self, ctx: RoundContext) -> dict[str, float]:
        message = Message(arrays={"w": self.w}, config={"round": ctx.round})
        self.exchanges += 1  # state changed before a possibly failing exchange
        spec = ReplySpec.like({"w": self.w}, metrics={"num_examples"}, config=frozenset({"handled"}))
        average, replies = ctx.exchange_aggregated(
            dict.fromkeys(ctx.clients, message), expect=spec, reference={"w": self.w}
        )
        if self.crash_at == ctx.round:
            raise SimulatedKill(f"killed in round {ctx.round}")
        self.last_repliers = sorted(replies)
        self.w = average["w"]
        self.aggregations += 1
        return {"mean_handled": float(np.mean([r.config["handled"] for r in replies.values()]))}

    def evaluate(self, rnd: int) -> dict[str, float]:
        self.evaluated_rounds.append(rnd)
        return {"distance": float(np.linalg.norm(self.w - self.target))}

    def state_dict(self) -> ClientState:
        return ClientState(
            arrays={"w": self.w.copy()},
            config={"aggregations": self.aggregations, "exchanges": self.exchanges},
        )

    def load_state_dict(self, state: ClientState) -> None:
        self.w = np.array(state.arrays["w"], dtype=np.float64)
        self.aggregations = int(state.config["aggregations"])
        self.exchanges = int(state.config["exchanges"])


@dataclass
class Toy:
    """One assembled toy federation."""

    federation: Federation
    server: ToyServer
    grid: InProcessGrid


@pytest.fixture
def make_toy() -> Callable[..., Toy]:
    """Factory of toy federations: ``make_toy(seed=..., rounds=..., schedule=...)``.

    ``wrap_grid`` lets a test put a spy between the federation and the
    in-process grid; ``Toy.grid`` is always the in-process grid itself.
    ``secure`` runs the rounds through secure aggregation.
    """

    def build(
        *,
        seed: int = 0,
        rounds: int = 4,
        schedule: Schedule | None = None,
        evaluate_every: int = 1,
        checkpoint: Path | None = None,
        fingerprint: str = "toy",
        crash_at: int | None = None,
        wrap_grid: Callable[[InProcessGrid], Grid] | None = None,
        secure: SecureAggregation | None = None,
    ) -> Toy:
        schedule = schedule if schedule is not None else Schedule(num_clients=4)
        server = ToyServer(schedule.num_clients, crash_at=crash_at)
        grid = InProcessGrid(ToyClient if secure is None else lambda c: SecureClient(ToyClient(c)), seed=seed)
        federation = Federation(
            server,
            grid if wrap_grid is None else wrap_grid(grid),
            schedule,
            seed=seed,
            rounds=rounds,
            evaluate_every=evaluate_every,
            checkpoint=checkpoint,
            fingerprint=fingerprint,
            secure=secure,
        )
        return Toy(federation=federation, server=server, grid=grid)

    return build


@pytest.fixture
def simulated_kill() -> type[SimulatedKill]:
    """The exception a toy server raises in its ``crash_at`` round."""
    return SimulatedKill


@pytest.fixture
def toy_client() -> type[ToyClient]:
    """The toy client logic class (built as ``ToyClient(client_id)``)."""
    return ToyClient
