"""Private row alignment of vertical parties by ECDH private set intersection (``openmined-psi``).

The active party's rows are the task's rows. With each passive party it runs
two private set intersections over their ID columns, in two exchanges:

1. down: the active party's PSI request (its IDs, each hashed to the curve
   and raised to its secret key); up: the passive party's setup (its IDs
   under its own key, sorted), its answer to the request (the request raised
   to its key), and its own PSI request.
2. down: the active party's setup and answer to that request, and the
   positions in its row order of the rows both hold, sorted by ID; up: the
   number of rows the passive party found in common.

What each side learns: the active party learns which of its rows the
passive party holds, and the size of the passive party's table. The passive
party learns which of its rows the active party holds (the rows it must
serve), their positions in the active party's row order, and the size of the
active party's table. Neither learns any ID outside the intersection: what
crosses are elliptic-curve points under a key the receiver does not hold,
never an ID or an unkeyed hash of one (a keyed hash would not do: a party
holding the key could test guessed IDs). The raw data structure is used, so
the intersection is exact (no false positives).
"""

from __future__ import annotations

import secrets
from typing import Any

import numpy as np
from typing_extensions import override

from fedmosaic.errors import FedmosaicError
from fedmosaic.federation import (
    ClientContext,
    ClientLogic,
    ClientState,
    Federation,
    InProcessGrid,
    Message,
    RoundContext,
    Schedule,
    ServerLogic,
)
from fedmosaic.federation.message import as_int
from fedmosaic.federation.round import MessageObserver
from fedmosaic.federation.validation import ArraySpec, ReplySpec

REQUEST = "query.psi-request"
"""Kind of the first exchange."""
ROWS = "query.psi-rows"
"""Kind of the second exchange."""
FPR = 1e-9
"""False-positive rate the library asks for (unused by the raw data structure)."""
_BYTES = ArraySpec((None,), "uint8")


def _psi() -> Any:
    """The ``openmined-psi`` package (imported on use: only vertical tables need it); it is untyped, so is what it makes."""
    try:
        import private_set_intersection.python as psi
    except ImportError:
        raise FedmosaicError(
            "vertical tables align rows with openmined-psi: pip install --no-deps openmined-psi==2.0.6"
        ) from None
    return psi


def _pack(proto: Any) -> np.ndarray:
    return np.frombuffer(proto.SerializeToString(), dtype=np.uint8).copy()


def _unpack(kind: type, array: np.ndarray) -> Any:
    proto = kind()
    proto.ParseFromString(np.ascontiguousarray(array, dtype=np.uint8).tobytes())
    return proto


def _client(psi: Any, key: np.ndarray | None) -> Any:
    if key is None:
        return psi.client.CreateWithNewKey(True)
    return psi.client.CreateFromKey(key.tobytes(), True)


def _server(psi: Any) -> Any:
    return psi.server.CreateFromKey(secrets.token_bytes(32), True)


class AlignmentClient(ClientLogic):
    """A passive party: answers the active party's intersection and learns the rows it must serve.

    Its PSI client key stays in its state between the two exchanges; at the
    end its state holds ``rows`` (its own row indices in the intersection)
    and ``positions`` (where each sits in the active party's row order).

    Parameters
    ----------
    ids : list of str
        The party's IDs, in its row order.
    """

    def __init__(self, ids: list[str]) -> None:
        self._ids = ids

    @override
    def handle(self, message: Message, state: ClientState, context: ClientContext) -> Message:
        psi = _psi()
        if message.kind == REQUEST:
            server = _server(psi)
            request = _unpack(psi.Request, message.arrays["request"])
            setup = server.CreateSetupMessage(FPR, as_int(message.config["rows"]), self._ids, psi.DataStructure.RAW)
            client = _client(psi, None)
            state.arrays["key"] = np.frombuffer(client.GetPrivateKeyBytes(), dtype=np.uint8).copy()
            return Message(
                arrays={
                    "setup": _pack(setup),
                    "response": _pack(server.ProcessRequest(request)),
                    "request": _pack(client.CreateRequest(self._ids)),
                },
                config={"rows": len(self._ids)},
                kind=message.kind,
            )
        client = _client(psi, state.arrays.pop("key"))
        found = client.GetIntersection(
            _unpack(psi.ServerSetup, message.arrays["setup"]), _unpack(psi.Response, message.arrays["response"])
        )
        rows = np.array(sorted(found, key=lambda i: self._ids[i]), dtype=np.int64)
        positions = np.asarray(message.arrays["positions"], dtype=np.int64)
        if len(positions) != len(rows):
            raise FedmosaicError(f"alignment: {len(rows)} rows in common here, {len(positions)} positions received")
        state.arrays["rows"], state.arrays["positions"] = rows, positions.copy()
        state.config["active_rows"] = as_int(message.config["rows"])
        return Message(metrics={"common": float(len(rows))}, kind=message.kind)


class AlignmentServer(ServerLogic):
    """The active party: learns which of its rows each passive party holds (one round, two exchanges).

    Parameters
    ----------
    ids : list of str
        The active party's IDs, in its row order (the task's rows).

    Attributes
    ----------
    present : dict of int to numpy.ndarray
        After the round, for each passive client: bool ``(n,)``, whether it
        holds each row.
    """

    def __init__(self, ids: list[str]) -> None:
        self._ids = ids
        self.present: dict[int, np.ndarray] = {}

    @override
    def initialize(self, seed: int) -> None:
        self.present = {}

    @override
    def run_round(self, ctx: RoundContext) -> dict[str, float]:
        psi = _psi()
        clients = {c: _client(psi, None) for c in ctx.clients}
        down = {
            c: Message(
                arrays={"request": _pack(client.CreateRequest(self._ids))},
                config={"rows": len(self._ids)},
                kind=REQUEST,
            )
            for c, client in clients.items()
        }
        first = ctx.exchange(
            down,
            expect=ReplySpec(
                arrays={"setup": _BYTES, "response": _BYTES, "request": _BYTES},
                config=frozenset({"rows"}),
                kind=REQUEST,
            ),
        )
        second = {}
        for c, reply in sorted(first.items()):
            found = clients[c].GetIntersection(
                _unpack(psi.ServerSetup, reply.arrays["setup"]), _unpack(psi.Response, reply.arrays["response"])
            )
            held = np.zeros(len(self._ids), dtype=bool)
            held[np.asarray(found, dtype=np.int64)] = True
            self.present[c] = held
            server = _server(psi)
            setup = server.CreateSetupMessage(FPR, as_int(reply.config["rows"]), self._ids, psi.DataStructure.RAW)
            positions = np.array(sorted(np.flatnonzero(held), key=lambda i: self._ids[i]), dtype=np.int64)
            second[c] = Message(
                arrays={
                    "setup": _pack(setup),
                    "response": _pack(server.ProcessRequest(_unpack(psi.Request, reply.arrays["request"]))),
                    "positions": positions,
                },
                config={"rows": len(self._ids)},
                kind=ROWS,
            )
        replies = ctx.exchange(second, expect=ReplySpec(metrics=frozenset({"common"}), kind=ROWS))
        for c, reply in replies.items():
            if int(reply.metrics["common"]) != int(self.present[c].sum()):
                raise FedmosaicError(f"alignment with passive party {c + 1}: the two intersections differ in size")
        return {f"common_{c + 1}": float(self.present[c].sum()) for c in sorted(self.present)}

    @override
    def evaluate(self, rnd: int) -> dict[str, float]:
        return {}

    @override
    def state_dict(self) -> ClientState:
        return ClientState(arrays={f"present_{c}": held for c, held in self.present.items()})

    @override
    def load_state_dict(self, state: ClientState) -> None:
        self.present = {int(name.split("_")[1]): held for name, held in state.arrays.items()}


def align(
    active_ids: list[str], passive_ids: list[list[str]], seed: int, observer: MessageObserver | None = None
) -> tuple[np.ndarray, list[tuple[np.ndarray, np.ndarray]]]:
    """Run the private set intersection of the active party with every passive party, in this process.

    Returns
    -------
    present : numpy.ndarray
        bool ``(n, K)``: which party holds each of the active party's rows
        (what the active party learns).
    served : list of (rows, positions)
        For each passive party, what it learns: its own rows in the
        intersection and their positions in the active party's row order.
    """
    server = AlignmentServer(active_ids)
    parties = len(passive_ids)
    schedule = Schedule(num_clients=parties, min_replies=parties)
    with InProcessGrid(lambda c: AlignmentClient(passive_ids[c]), seed) as grid:
        Federation(server, grid, schedule, seed=seed, rounds=1, observer=observer).run()
        states = grid.client_states()
    if len(server.present) < parties or len(states) < parties:
        raise FedmosaicError("row alignment needs every passive party; some did not reply")
    present = np.ones((len(active_ids), parties + 1), dtype=bool)
    for c in range(parties):
        present[:, c + 1] = server.present[c]
    served = [(states[c].arrays["rows"], states[c].arrays["positions"]) for c in range(parties)]
    return present, served
