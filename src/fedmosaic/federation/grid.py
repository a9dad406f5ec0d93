"""The interface through which server logic reaches clients."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping

from fedmosaic.federation.message import Message
from fedmosaic.federation.state import ClientState


class Grid(ABC):
    """Delivers messages to clients and collects their replies.

    Engines implement this: the in-process engine calls client logic
    directly; the Flower bridge sends Flower messages.
    """

    @abstractmethod
    def send_and_receive(
        self, messages: Mapping[int, Message], rnd: int, failing: frozenset[int]
    ) -> dict[int, Message]:
        """Send each client its message and return the replies that arrive.

        Parameters
        ----------
        messages : mapping of int to Message
            One message per addressed client.
        rnd : int
            The round the exchange belongs to.
        failing : frozenset of int
            Clients whose reply is simulated to be lost (they receive their
            message but never answer).

        Returns
        -------
        dict of int to Message
            Replies keyed by client id; a client that failed is absent.
        """

    def client_states(self) -> dict[int, ClientState]:
        """Client states the engine holds (for checkpoints); empty if it holds none."""
        return {}

    def load_client_states(self, states: Mapping[int, ClientState]) -> None:
        """Restore client states saved by :meth:`client_states`."""
        if states:
            raise NotImplementedError(f"{type(self).__name__} keeps no client state")

    def close(self) -> None:  # noqa: B027 - an optional hook: engines that hold nothing need not override it
        """Release what the engine holds (processes, files); the grid is unusable afterwards."""

    def __enter__(self) -> Grid:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
