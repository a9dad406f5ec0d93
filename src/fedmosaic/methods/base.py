"""What every method provides: validated parameters and a builder."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from fedmosaic.federation import ClientLogic, ServerLogic

Built = tuple[ServerLogic, Callable[[int], ClientLogic]]
TaskKind = Literal["classification", "concepts", "vertical"]


class MethodParams(BaseModel):
    """Base of every method's parameters: unknown keys and loose types are rejected."""

    model_config = ConfigDict(extra="forbid", strict=True)


@dataclass(frozen=True)
class Method:
    """A registered method.

    Parameters
    ----------
    name : str
        Name used in configurations.
    summary : str
        One line for listings.
    kind : {"classification", "concepts", "vertical"}
        The kind of task (and of prepared data) the method is built from.
    params : type of MethodParams
        Validates the method's parameters.
    build : callable (task, MethodParams) -> (ServerLogic, client factory)
        Creates the server logic and a factory of client logic by client id.
    dp_sgd : bool, default False
        Whether its clients may train with local DP-SGD (``train.dp_noise_multiplier``):
        its loss is a mean of per-example terms, with nothing that mixes
        examples of a batch or depends on the parameters alone.
    """

    name: str
    summary: str
    kind: TaskKind
    params: type[MethodParams]
    build: Callable[[Any, MethodParams], Built]
    dp_sgd: bool = False
