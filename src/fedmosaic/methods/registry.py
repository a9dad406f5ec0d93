"""The methods fedmosaic can run, by name, with their validated parameters."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Callable

from pydantic import BaseModel, ConfigDict, Field
from torch import nn

from fedmosaic.data.arrays import ArrayDataset
from fedmosaic.errors import ConfigError
from fedmosaic.federation import ClientLogic, ServerLogic
from fedmosaic.methods.fedavg import FedAvgClient, FedAvgServer
from fedmosaic.methods.models import ModelParams, build_model
from fedmosaic.methods.training import TrainParams


class MethodParams(BaseModel):
    """Base of every method's parameters: unknown keys are rejected."""

    model_config = ConfigDict(extra="forbid", strict=True)


class FedAvgParams(MethodParams):
    """FedAvg takes no parameters beyond the shared training ones."""


class FedProxParams(MethodParams):
    """FedProx parameters.

    Parameters
    ----------
    mu : float, default 0.01
        Weight of the proximal term ``mu / 2 * ||w - w_global||^2`` (> 0).
    """

    mu: float = Field(default=0.01, gt=0)


@dataclass(frozen=True)
class HorizontalTask:
    """What a horizontal classification method is built from.

    Parameters
    ----------
    clients : list of ArrayDataset
        Each client's private training data, by client id.
    test : ArrayDataset
        The global test set.
    model : ModelParams
        Architecture of the model.
    train : TrainParams
        Local training hyper-parameters.
    """

    clients: list[ArrayDataset]
    test: ArrayDataset
    model: ModelParams
    train: TrainParams

    def model_factory(self) -> Callable[[], nn.Module]:
        """A function building a fresh model of the task's architecture."""
        shape = tuple(self.test.x.shape[1:])
        classes = self.test.num_classes
        return lambda: build_model(self.model, shape, classes)


Built = tuple[ServerLogic, Callable[[int], ClientLogic]]


@dataclass(frozen=True)
class Method:
    """A registered method.

    Parameters
    ----------
    name : str
        Name used in configurations.
    summary : str
        One line for listings.
    params : type of MethodParams
        Validates the method's parameters.
    build : callable (HorizontalTask, MethodParams) -> (ServerLogic, client factory)
        Creates the server logic and a factory of client logic by client id.
    """

    name: str
    summary: str
    params: type[MethodParams]
    build: Callable[[HorizontalTask, MethodParams], Built]


def _build_fedavg(task: HorizontalTask, params: MethodParams) -> Built:
    factory = task.model_factory()
    mu = params.mu if isinstance(params, FedProxParams) else 0.0
    server = FedAvgServer(factory, task.test)
    return server, lambda client: FedAvgClient(factory, task.clients[client], task.train, mu=mu)


METHODS: dict[str, Method] = {
    m.name: m
    for m in (
        Method("fedavg", "FedAvg: example-weighted average of full models", FedAvgParams, _build_fedavg),
        Method("fedprox", "FedProx: FedAvg with a proximal term mu", FedProxParams, _build_fedavg),
    )
}


def get_method(name: str, *, field: str = "method") -> Method:
    """The method registered as ``name``.

    Raises
    ------
    ConfigError
        Naming ``field`` and the accepted names (with a did-you-mean).

    Examples
    --------
    >>> get_method("fedavg").summary
    'FedAvg: example-weighted average of full models'
    """
    if name in METHODS:
        return METHODS[name]
    close = difflib.get_close_matches(name, METHODS, n=1)
    hint = f"; did you mean '{close[0]}'?" if close else ""
    raise ConfigError(field, f"unknown method '{name}'{hint} (accepted: {', '.join(sorted(METHODS))})")
