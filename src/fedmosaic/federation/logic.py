"""The two halves of every method: server logic and client logic.

They talk only through :class:`~fedmosaic.federation.message.Message` objects,
so the same code runs on any engine that implements
:class:`~fedmosaic.federation.grid.Grid`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from fedmosaic.federation.message import Message
from fedmosaic.federation.round import RoundContext
from fedmosaic.federation.state import ClientState

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
class ClientCall:
    """One client's message as a process hands it over: the client's logic, the message, its state and context."""

    logic: ClientLogic
    message: Message
    state: ClientState
    context: ClientContext


class ClientLogic(ABC):
    """A client's side of a method: turns a message and its state into a reply.

    A client logic object holds the client's private data and its
    hyper-parameters. Everything it must remember between messages goes to
    ``state``; any other attribute is a cache that may be lost at any time.
    """

    handles_together: ClassVar[bool] = False
    """Whether :meth:`handle_together` does better than one :meth:`handle` after another.

    An engine that runs several clients of this class in one process hands
    them an exchange's messages at once when it is true; on any other engine
    (one client per node) each message goes to :meth:`handle`.
    """

    @abstractmethod
    def handle(self, message: Message, state: ClientState, context: ClientContext) -> Message:
        """Handle one message, updating ``state`` in place, and return the reply."""

    @classmethod
    def handle_together(cls, calls: Sequence[ClientCall]) -> list[Message]:
        """Handle several clients' messages of one exchange; the replies in the order of ``calls``.

        An override (with :attr:`handles_together` set) evaluates the clients
        in one computation, but must leave every state and reply as
        :meth:`handle` would, up to float rounding: the same method then
        gives the same numbers where each client is a node of its own.
        The default handles them one after another.
        """
        return [call.logic.handle(call.message, call.state, call.context) for call in calls]

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
    def state_dict(self) -> ClientState:
        """The global state as named arrays and config."""

    @abstractmethod
    def load_state_dict(self, state: ClientState) -> None:
        """Restore the global state saved by :meth:`state_dict`."""
