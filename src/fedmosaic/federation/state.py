"""Explicit client state.

On a Flower deployment every message may run in a fresh process, so whatever a
client must remember between rounds is held in a :class:`ClientState`, made of
named arrays and config only, exactly what Flower's ``context.state`` can hold.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fedmosaic.federation.message import ConfigValue


@dataclass
class ClientState:
    """What one client keeps between the messages it handles.

    Parameters
    ----------
    arrays : dict of str to numpy.ndarray, default empty
        Named tensors (e.g. a personal model, optimizer moments).
    config : dict of str to scalar or list, default empty
        Small values (e.g. the round the client joined).

    Examples
    --------
    >>> state = ClientState()
    >>> state.config["joined"] = 3
    >>> state.nbytes()
    8
    """

    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    config: dict[str, ConfigValue] = field(default_factory=dict)

    def nbytes(self) -> int:
        """Approximate memory held by this state, in bytes."""
        return sum(int(a.nbytes) for a in self.arrays.values()) + 8 * len(self.config)


ServerState = ClientState
"""What a server logic saves and restores (:meth:`~fedmosaic.federation.logic.ServerLogic.state_dict`):
the same container of named arrays and config as a client's state."""
