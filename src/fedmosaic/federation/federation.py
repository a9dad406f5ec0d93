"""The round loop: schedule, exchange, evaluate, record, checkpoint."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from fedmosaic.errors import FedmosaicError
from fedmosaic.federation.audit import MessageLog
from fedmosaic.federation.checkpoint import Checkpoint, load_checkpoint, save_checkpoint
from fedmosaic.federation.grid import Grid
from fedmosaic.federation.logic import ServerLogic
from fedmosaic.federation.privacy import PrivacyBudget
from fedmosaic.federation.record import RoundRecord
from fedmosaic.federation.rng import capture_rng_states, restore_rng_states
from fedmosaic.federation.robust import Aggregator, Mean
from fedmosaic.federation.round import MessageObserver, QuorumNotMet, RoundContext
from fedmosaic.federation.schedule import Schedule
from fedmosaic.federation.validation import ReplyLimits

if TYPE_CHECKING:
    from fedmosaic.federation.secagg.server import SecureAggregation  # Flower's protocol code: a secure run's only


class Federation:
    """Runs a server logic against a grid for a number of rounds.

    Parameters
    ----------
    server : ServerLogic
        The method's server side.
    grid : Grid
        The engine reaching the clients.
    schedule : Schedule
        Who takes part in each round.
    seed : int
        Experiment seed.
    rounds : int
        Number of rounds.
    evaluate_every : int, default 1
        Evaluate the global state every this many rounds, and after the last.
    checkpoint : Path or None, default None
        Where to write a checkpoint after every round.
    fingerprint : str, default ""
        Identifies the configuration; a resumed checkpoint must match it.
    limits : ReplyLimits, default ReplyLimits()
        Size and sample-count limits of every reply.
    retries : int, default 0
        Quorum policy: when a round lacks valid replies, roll it back and
        try it again this many times with clients sampled afresh (from
        ``(seed, round, "sample", attempt)``) before skipping it; 0 skips at
        once.
    observer : callable or None, default None
        Sees every message that crosses (the message audit).
    aggregator : Aggregator, default Mean()
        How the server logic's :meth:`RoundContext.aggregate` combines replies.
    privacy : PrivacyBudget or None, default None
        With a :class:`~fedmosaic.federation.privacy.GaussianMechanism`
        aggregator: its noise and delta, so that each round whose server
        logic aggregated with noise records the privacy spent so far
        (``dp_epsilon``, ``dp_delta``, ``dp_sample_rate``); a round without
        a noised aggregation records none.
    secure : SecureAggregation or None, default None
        Run each round's upload through secure aggregation (the server logic's
        :meth:`RoundContext.exchange_aggregated`) instead of ``aggregator``.

    Examples
    --------
    See ``tests/federation/test_federation.py`` for complete small runs.
    """

    def __init__(
        self,
        server: ServerLogic,
        grid: Grid,
        schedule: Schedule,
        *,
        seed: int,
        rounds: int,
        evaluate_every: int = 1,
        checkpoint: Path | None = None,
        fingerprint: str = "",
        limits: ReplyLimits = ReplyLimits(),
        retries: int = 0,
        observer: MessageObserver | None = None,
        aggregator: Aggregator | None = None,
        privacy: PrivacyBudget | None = None,
        secure: SecureAggregation | None = None,
    ) -> None:
        if rounds < 1:
            raise ValueError(f"rounds must be >= 1, got {rounds}")
        if evaluate_every < 1:
            raise ValueError(f"evaluate_every must be >= 1, got {evaluate_every}")
        if retries < 0:
            raise ValueError(f"retries must be >= 0, got {retries}")
        self.server = server
        self.grid = grid
        self.schedule = schedule
        self.seed = seed
        self.rounds = rounds
        self.evaluate_every = evaluate_every
        self.checkpoint = checkpoint
        self.fingerprint = fingerprint
        self.limits = limits
        self.retries = retries
        self.observer = observer
        self.aggregator = aggregator if aggregator is not None else Mean()
        self.privacy = privacy
        self.secure = secure
        self._history: list[RoundRecord] = []

    def run(self, *, resume: bool = False, on_round: Callable[[RoundRecord], None] | None = None) -> list[RoundRecord]:
        """Run the remaining rounds and return the history of all rounds.

        The run ends after ``rounds`` rounds, or earlier once the server
        logic reports :meth:`~fedmosaic.federation.logic.ServerLogic.done`
        (the last round run is then evaluated).

        Parameters
        ----------
        resume : bool, default False
            Continue from the checkpoint if there is one.
        on_round : callable or None
            Called with each round's record as it finishes, and first with the
            records restored from a checkpoint (so progress displays count them).
        """
        history = self._restore() if resume else None
        if history is None:
            self.server.initialize(self.seed)
            history = []
        self._history = history  # the rounds so far, read by the privacy accounting
        if isinstance(self.observer, MessageLog):
            self.observer.keep_rounds(len(history))  # forget messages of a round interrupted before
        for record in history:
            if on_round is not None:
                on_round(record)
        while len(history) < self.rounds and not self.server.done():
            record = self._run_round(len(history) + 1)
            history.append(record)
            self._save(history)
            if on_round is not None:
                on_round(record)
        return history

    def _run_round(self, rnd: int) -> RoundRecord:
        start = time.perf_counter()
        attempts: list[RoundContext] = []
        status, reasons, metrics = "skipped", [], {}
        while len(attempts) <= self.retries:
            ctx = self._context(rnd, attempt=len(attempts))
            attempts.append(ctx)
            if not ctx.clients:
                reasons.append("no client available")
                break
            before = self.server.state_dict()
            try:
                metrics = dict(self.server.run_round(ctx))
            except QuorumNotMet as error:
                self.server.load_state_dict(before)
                reasons.append(str(error))
                continue
            status = "ok"
            if self.privacy is not None and ctx.noised:
                rate = len(ctx.clients) / len(self.schedule.available(rnd))  # per available client
                metrics.update(self.privacy.spent(self._history, rate))
            break
        if rnd % self.evaluate_every == 0 or rnd == self.rounds or self.server.done():
            metrics.update(self.server.evaluate(rnd))
        sampled = sorted({c for ctx in attempts for c in ctx.clients})
        replied = set().union(*(ctx.replied for ctx in attempts))
        rejected = {str(c): reason for ctx in attempts for c, reason in ctx.rejected.items()}
        reason = (
            ""
            if status == "ok"
            else "; ".join(r if len(reasons) == 1 else f"attempt {i + 1}: {r}" for i, r in enumerate(reasons))
        )
        return RoundRecord(
            round=rnd,
            status=status,
            clients_sampled=len(sampled),
            replies=len(replied),
            dropped=sorted(set(sampled) - replied),
            bytes_up=sum(ctx.bytes_up for ctx in attempts),
            bytes_down=sum(ctx.bytes_down for ctx in attempts),
            trips=sum(ctx.trips for ctx in attempts),
            wall_time_s=time.perf_counter() - start,
            metrics={k: float(v) for k, v in metrics.items()},
            reason=reason,
            rejected=rejected,
            attempts=len(attempts),
        )

    def _context(self, rnd: int, *, attempt: int) -> RoundContext:
        sampled = self.schedule.sample(rnd, self.seed, attempt=attempt)
        return RoundContext(
            round=rnd,
            clients=sampled,
            seed=self.seed,
            grid=self.grid,
            failing=self.schedule.failing(rnd, sampled, self.seed),
            min_replies=self.schedule.min_replies,
            limits=self.limits,
            observer=self.observer,
            aggregator=self.aggregator,
            secure=self.secure,
        )

    def _save(self, history: list[RoundRecord]) -> None:
        if self.checkpoint is None:
            return
        save_checkpoint(
            Checkpoint(
                fingerprint=self.fingerprint,
                server=self.server.state_dict(),
                clients=self.grid.client_states(),
                history=[r.to_dict() for r in history],
                finished=len(history) == self.rounds or self.server.done(),
                rng=capture_rng_states(),
            ),
            self.checkpoint,
        )

    def _restore(self) -> list[RoundRecord] | None:
        if self.checkpoint is None or not self.checkpoint.exists():
            return None
        saved = load_checkpoint(self.checkpoint)
        if saved.fingerprint != self.fingerprint:
            raise FedmosaicError(
                f"checkpoint {self.checkpoint} belongs to another configuration; "
                "start without --resume or use another --out folder"
            )
        self.server.load_state_dict(saved.server)
        self.grid.load_client_states(saved.clients)
        restore_rng_states(saved.rng)
        return [RoundRecord(**r) for r in saved.history]
