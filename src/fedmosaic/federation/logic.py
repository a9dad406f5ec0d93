"""The two halves of every method: server logic and client logic.

They talk only through :class:`~fedmosaic.federation.message.Message` objects,
so the same code runs on any engine that implements
:class:`~fedmosaic.federation.grid.Grid`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from fedmosaic.federation.message import Message
from fedmosaic.federation.round import RoundContext
from fedmosaic.federation.state import ClientState, ServerState

if TYPE_CHECKING:  # a plain dataclass; the federation does not depend on model files
    from fedmosaic.models.export import ModelExport


@dataclass(frozen=True)
class ClientContext:
    """What a client knows about the message it is handling.

    Parameters
    ----------
    client_id : int
        The client's partition index.
    round : int
        The round the message belongs to (1-based).
    seed : int
        Seed derived from (experiment seed, round, client id) for this
        client's random draws in this round.
    """

    client_id: int
    round: int
    seed: int


@dataclass(frozen=True)
class ClientJob:
    """One client's message, with the logic, state and context that handle it."""

    logic: ClientLogic
    message: Message
    state: ClientState
    context: ClientContext


class ClientLogic(ABC):
    """A client's side of a method: turns a message and its state into a reply.

    A client logic object holds the client's private data and its
    hyper-parameters. Everything it must remember between messages goes to
    ``state``; any other attribute is a cache that may be lost at any time.

    A method may also handle several clients' messages at once
    (:meth:`batch_key`, :meth:`handle_many`); engines that run clients in one
    process use that where the method offers it, the others call :meth:`handle`.
    """

    @abstractmethod
    def handle(self, message: Message, state: ClientState, context: ClientContext) -> Message:
        """Handle one message, updating ``state`` in place, and return the reply."""

    def batch_key(self, message: Message) -> Hashable | None:
        """A key under which ``message`` may be handled together with other clients' messages of the same key.

        Messages whose logics are of one class and share a key go to that
        class's :meth:`handle_many` together. None (the default): handled alone.
        """
        return None

    @classmethod
    def handle_many(cls, jobs: Sequence[ClientJob]) -> list[Message]:
        """Handle several clients' messages of one :meth:`batch_key` together; the replies in the order of ``jobs``.

        Each reply, and each state left behind, must be what :meth:`handle`
        gives for that job alone (up to float rounding). The default handles
        the jobs one after another.
        """
        return [job.logic.handle(job.message, job.state, job.context) for job in jobs]

    def exported_part(self, state: ClientState) -> dict[str, np.ndarray] | None:
        """The part of the model this client keeps in ``state`` (named arrays), read after the run.

        None (the default) for clients whose model the server holds.
        """
        return None


class ServerLogic(ABC):
    """The server's side of a method.

    The federation calls :meth:`initialize` once, then for each round
    :meth:`run_round` and, on evaluation rounds, :meth:`evaluate`, until the
    last round or until :meth:`done`.
    :meth:`state_dict` / :meth:`load_state_dict` make the server checkpointable.
    """

    @abstractmethod
    def initialize(self, seed: int) -> None:
        """Create the initial global state from derived randomness."""

    @abstractmethod
    def run_round(self, ctx: RoundContext) -> dict[str, float]:
        """Run one round through ``ctx.exchange`` and return training metrics."""

    @abstractmethod
    def evaluate(self, rnd: int) -> dict[str, float]:
        """Evaluate the global state and return metrics."""

    def artifacts(self) -> dict[str, Any]:
        """JSON-ready results beyond per-round metrics (curves, graphs), read after the run."""
        return {}

    def exported_model(self) -> ModelExport | None:
        """The model the run tests (the selected one where the server keeps one), read after the run.

        Written to the run's ``model/`` folder; None (the default) for a
        method that exports no model.
        """
        return None

    def done(self) -> bool:
        """Whether the method has finished before the last round (e.g. early stopping).

        The federation runs no further round once this is true; it must be
        part of the state saved by :meth:`state_dict`.
        """
        return False

    @abstractmethod
    def state_dict(self) -> ServerState:
        """The global state as named arrays and config."""

    @abstractmethod
    def load_state_dict(self, state: ServerState) -> None:
        """Restore the global state saved by :meth:`state_dict`."""
