"""What every passive party does: keep its block private, its model and optimizer in its state.

A passive party holds its column block of the train and test rows (NaN where
it does not hold a row), a model and its optimizer (Adam, or SGD for a split baseline that asks for it). Both live in the
:class:`~fedmosaic.federation.ClientState` as named arrays (``model.*``,
``opt.*``), so a party survives being rebuilt between messages; the model of
the round selected on validation is kept beside it (``best.*``). Rows travel as
int64 positions; features never leave the party.

On the CPU the arrays a party writes into its state are views of its live
tensors: the optimizer's in-place steps keep them current, so a party writes
them once rather than after every step (copying a party's network and
moments after each batch was about a tenth of FALSE-VFL's exchanges). A state
that leaves the process (a checkpoint, a spill, another worker, Flower) is
serialized, so it holds the values of that moment; a party that is given a
state holding other arrays first moves its tensors to fresh memory, so the
views it wrote before keep their values.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from itertools import chain

import numpy as np
import torch
from torch import Tensor, nn

from fedmosaic.data.vertical_data import VerticalSplit
from fedmosaic.devices import to_device
from fedmosaic.federation import ClientLogic, ClientState
from fedmosaic.methods.arrays import load_arrays, model_to_arrays, seeded, to_array, to_tensor
from fedmosaic.methods.vertical.optimizer_state import (
    OPTIMIZER_PREFIX,
    OptimizerSpec,
    load_optimizer_arrays,
    optimizer_to_arrays,
)

MODEL, PENDING, BEST = "model.", "pending.", "best."


class PartyClient(ClientLogic):
    """Base of the passive parties of the vertical methods.

    Parameters
    ----------
    party : int
        The party's index (1..K-1).
    splits : mapping of str to VerticalSplit
        The splits by name (``train`` and the test settings); only column
        block ``party`` and its presence are read.
    build : callable () -> torch.nn.Module
        Builds the party's model.
    optimizer : OptimizerSpec
        The party's optimizer.
    """

    def __init__(
        self, party: int, splits: Mapping[str, VerticalSplit], build: Callable[[], nn.Module], optimizer: OptimizerSpec
    ) -> None:
        self.party = party
        self._splits = {
            name: (to_tensor(np.nan_to_num(split.blocks[party])), to_tensor(split.present[:, party]))
            for name, split in splits.items()
        }
        self._build = build
        self._optimizer = optimizer
        self._model: nn.Module | None = None
        self._live: torch.optim.Optimizer | None = None
        self._written: dict[str, np.ndarray] = {}  # the optimizer arrays _live last wrote into a state
        self._saved: dict[str, np.ndarray] = {}  # the model arrays _model last wrote into a state
        self._views = False  # whether _saved and _written view the live tensors (else they are copies)
        self._moments: list[Tensor] = []  # the optimizer's tensors _written views

    def features(self, split: str, rows: np.ndarray) -> tuple[Tensor, Tensor]:
        """The party's features of ``rows`` (zeros where absent) and their presence."""
        x, present = self._splits[split]
        index = to_tensor(np.array(rows, dtype=np.int64))
        return x[index], present[index]

    def held_rows(self, split: str) -> np.ndarray:
        """Positions of the rows of ``split`` the party holds."""
        return np.flatnonzero(to_array(self._splits[split][1]))

    def load(self, state: ClientState, seed: int) -> tuple[nn.Module, torch.optim.Optimizer]:
        """The model and optimizer kept in ``state`` (built from ``seed`` on first use).

        The network object is reused between messages and overwritten with
        every tensor kept in ``state`` (building and seeding one per message
        costs more than the party's whole computation), unless ``state``
        still holds the very arrays :meth:`save` wrote from it. So is the
        optimizer, where ``state`` still holds the very arrays it last wrote
        there: its moments are those arrays' values. A state that travelled
        (another process, a checkpoint) or was changed holds other arrays,
        and the network and optimizer are loaded from them.
        """
        saved = self.current(state)
        if self._model is None or not saved:
            self._model, self._live, self._saved = to_device(seeded(seed, self._build)), None, {}
        model = self._model
        if saved and not _same_arrays(saved, self._saved):
            _own_memory(model)
            load_arrays(model, saved)
        optimizer = self._live
        if optimizer is None or not self._holds_written(state):
            optimizer = self._optimizer.build(model.parameters())
            load_optimizer_arrays(optimizer, state.arrays)
        if not saved:
            self.save(state, model, optimizer)
        return model, optimizer

    def _holds_written(self, state: ClientState) -> bool:
        """Whether the optimizer arrays of ``state`` are exactly those :meth:`save` last wrote."""
        return _same_arrays({k: v for k, v in state.arrays.items() if k.startswith(OPTIMIZER_PREFIX)}, self._written)

    def exported_part(self, state: ClientState) -> dict[str, np.ndarray] | None:
        """The party's trained model, as kept in ``state`` (None before its first message)."""
        return self.current(state)

    @staticmethod
    def current(state: ClientState) -> dict[str, np.ndarray] | None:
        """The party's current model in ``state`` (None before its first message)."""
        return {k[len(MODEL) :]: v for k, v in state.arrays.items() if k.startswith(MODEL)} or None

    @staticmethod
    def kept(state: ClientState) -> dict[str, np.ndarray]:
        """The model :meth:`keep_best` kept in ``state`` (empty if none)."""
        return {k[len(BEST) :]: v for k, v in state.arrays.items() if k.startswith(BEST)}

    @staticmethod
    def keep_best(state: ClientState) -> None:
        """Keep the current model as the one selected on validation."""
        state.arrays.update({BEST + k[len(MODEL) :]: v.copy() for k, v in state.arrays.items() if k.startswith(MODEL)})

    def load_best(self, state: ClientState, seed: int) -> nn.Module:
        """The model kept by :meth:`keep_best` (the current one if none was kept)."""
        kept = self.kept(state)
        if not kept:
            return self.load(state, seed)[0]
        model = to_device(seeded(seed, self._build))
        load_arrays(model, kept)
        return model

    def save(self, state: ClientState, model: nn.Module, optimizer: torch.optim.Optimizer) -> None:
        """Write the model and optimizer into ``state`` (the optimizer is kept for the next message).

        Nothing is written where ``state`` already holds views of exactly
        these tensors (module docstring).
        """
        live = model is self._model
        if live and optimizer is self._live and self._holds_views(state, optimizer):
            return
        views = live and _on_cpu(model)
        arrays = model_to_arrays(model, copy=not views)
        state.arrays.update({MODEL + k: v for k, v in arrays.items()})
        self._saved = arrays if live else {}
        self._written = optimizer_to_arrays(optimizer, copy=not views)
        state.arrays.update(self._written)
        self._views, self._moments = views, _moments(optimizer)
        self._live = optimizer

    def _holds_views(self, state: ClientState, optimizer: torch.optim.Optimizer) -> bool:
        """Whether ``state`` holds views of the live model and of every tensor ``optimizer`` keeps now."""
        moments = _moments(optimizer)
        return (
            self._views
            and len(moments) == len(self._moments)
            and all(a is b for a, b in zip(moments, self._moments, strict=True))
            and _same_arrays(self.current(state) or {}, self._saved)
            and self._holds_written(state)
        )

    def step(self, state: ClientState, model: nn.Module, optimizer: torch.optim.Optimizer, surrogate: Tensor) -> None:
        """One optimizer step on ``surrogate`` (whose gradient is the received one), then save."""
        optimizer.zero_grad()
        surrogate.backward()
        optimizer.step()
        self.save(state, model, optimizer)

    @staticmethod
    def remember(state: ClientState, **arrays: np.ndarray) -> None:
        """Keep what the next message's gradients refer to."""
        state.arrays.update({PENDING + k: np.array(v) for k, v in arrays.items()})

    @staticmethod
    def pending(state: ClientState, name: str) -> np.ndarray:
        """What :meth:`remember` kept."""
        return state.arrays[PENDING + name]


def _same_arrays(held: Mapping[str, np.ndarray], written: Mapping[str, np.ndarray]) -> bool:
    """Whether ``held`` are the very array objects of ``written`` (not copies), under the same names."""
    return held.keys() == written.keys() and all(v is written[k] for k, v in held.items())


def _on_cpu(model: nn.Module) -> bool:
    """Whether every tensor of ``model`` is on the CPU (where a NumPy array can view it)."""
    return all(t.device.type == "cpu" for t in chain(model.parameters(), model.buffers()))


def _moments(optimizer: torch.optim.Optimizer) -> list[Tensor]:
    """The tensors ``optimizer`` keeps per parameter, in a fixed order."""
    return [t for entries in optimizer.state.values() for t in entries.values() if isinstance(t, Tensor)]


def _own_memory(model: nn.Module) -> None:
    """Move ``model``'s tensors to fresh memory, so arrays viewing the old memory keep their values."""
    with torch.no_grad():
        for tensor in chain(model.parameters(), model.buffers()):
            tensor.data = tensor.data.clone()
