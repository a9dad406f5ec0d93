"""The method contract (:mod:`fedmosaic.testing.contract`) over every registered method, as scikit-learn's estimator checks.

The checks are parametrised from :data:`~fedmosaic.methods.registry.METHODS`
itself, so a new method, a plugin's included, is covered without editing
this file. That the configuration refuses the features a method does not
declare is checked in ``tests/experiments/test_capabilities.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from fedmosaic.federation import RoundContext
from fedmosaic.methods.base import Method
from fedmosaic.methods.horizontal.fedavg.client import FedAvgClient
from fedmosaic.methods.horizontal.fedavg.params import FedAvgParams
from fedmosaic.methods.horizontal.fedavg.server import FedAvgServer
from fedmosaic.methods.horizontal.task import HorizontalTask
from fedmosaic.methods.registry import METHODS
from fedmosaic.testing.contract import (
    ContractError,
    check_bad_parameters,
    check_capability,
    check_checkpoint_round_trip,
    check_foreign_parameters,
    check_malformed_replies,
    check_resumes_exactly,
    check_runs,
    run_method,
)
from fedmosaic.testing.tiny_tasks import VARIANTS

CASES = [(name, variant) for name, method in METHODS.items() for variant in VARIANTS[method.kind]]
"""Every registered method on every tiny task of its kind."""


def _case_id(name: str, variant: str) -> str:
    return name if len(VARIANTS[METHODS[name].kind]) == 1 else f"{name}-{variant}"


IDS = [_case_id(name, variant) for name, variant in CASES]
NAMES = list(METHODS)
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA"))]
"""The devices every method runs on (``train.device``); CUDA only where one is present."""
DECLARED = [(name, variant, capability) for name, variant in CASES for capability in METHODS[name].supports.names()]
"""Every runtime feature a method declares, on each of its tiny tasks."""


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(("name", "variant"), CASES, ids=IDS)
def test_it_builds_and_runs_rounds_in_process(name: str, variant: str, device: str) -> None:
    check_runs(METHODS[name], variant, device)


@pytest.mark.parametrize(("name", "variant"), CASES, ids=IDS)
def test_an_interrupted_run_resumes_exactly_like_an_uninterrupted_one(name: str, variant: str, tmp_path: Path) -> None:
    check_resumes_exactly(METHODS[name], variant, tmp_path)


@pytest.mark.parametrize(("name", "variant"), CASES, ids=IDS)
def test_malformed_replies_are_dropped_with_their_reason_never_crashing(name: str, variant: str) -> None:
    check_malformed_replies(METHODS[name], variant)


@pytest.mark.parametrize("name", NAMES)
def test_bad_parameters_are_refused_on_one_line_naming_the_field(name: str) -> None:
    check_bad_parameters(METHODS[name])


@pytest.mark.parametrize("name", NAMES)
def test_it_refuses_to_be_built_from_another_methods_parameters(name: str) -> None:
    check_foreign_parameters(METHODS[name])


@pytest.mark.parametrize(("name", "variant"), CASES, ids=IDS)
def test_its_server_and_client_states_survive_a_checkpoint_file_bit_for_bit(
    name: str, variant: str, tmp_path: Path
) -> None:
    check_checkpoint_round_trip(METHODS[name], variant, tmp_path)


@pytest.mark.parametrize(
    ("name", "variant", "capability"), DECLARED, ids=[f"{_case_id(n, v)}-{c}" for n, v, c in DECLARED]
)
def test_the_runtime_features_it_declares_act_on_its_runs(
    name: str, variant: str, capability: str, tmp_path: Path
) -> None:
    check_capability(METHODS[name], variant, capability, tmp_path)


class ForgetfulServer(FedAvgServer):
    """FedAvg's server with a counter it sets up in ``initialize`` but forgets in ``state_dict``."""

    def __init__(self, task: HorizontalTask) -> None:
        super().__init__(task.model_factory(), task.test)
        self.rounds_seen = 0

    def initialize(self, seed: int) -> None:
        super().initialize(seed)
        self.rounds_seen = 0

    def run_round(self, ctx: RoundContext) -> dict[str, float]:
        self.rounds_seen += 1
        return super().run_round(ctx)


def _build_forgetful(
    task: HorizontalTask, params: FedAvgParams
) -> tuple[ForgetfulServer, Callable[[int], FedAvgClient]]:
    factory = task.model_factory()
    return ForgetfulServer(task), lambda client: FedAvgClient(factory, task.clients[client], task.train)


def test_the_resume_check_names_the_attribute_forgotten_in_state_dict(tmp_path: Path) -> None:
    # Prepare: a method whose server forgets a field; its results do not even depend on it
    method = Method("forgetful", "FedAvg with a forgotten counter", "classification", FedAvgParams, _build_forgetful)

    # Execute / Assert
    with pytest.raises(ContractError, match=r"^forgetful: resumes exactly on horizontal: .*rounds_seen"):
        check_resumes_exactly(method, "horizontal", tmp_path, run_method(method, "horizontal"))


class BrokenStateServer(FedAvgServer):
    """FedAvg's server whose state_dict fails the way a method's own bug would."""

    def state_dict(self):  # type: ignore[no-untyped-def]
        raise KeyError("momentum/fc.weight")


def test_a_method_s_own_error_is_reported_as_the_contract_it_broke() -> None:
    # Prepare
    def build(task: HorizontalTask, params: FedAvgParams) -> tuple[BrokenStateServer, Callable[[int], FedAvgClient]]:
        factory = task.model_factory()
        return BrokenStateServer(factory, task.test), lambda client: FedAvgClient(
            factory, task.clients[client], task.train
        )

    method = Method("broken", "FedAvg whose state fails", "classification", FedAvgParams, build)

    # Execute / Assert
    with pytest.raises(ContractError, match=r"^broken: check_runs: raised KeyError: 'momentum/fc.weight'$"):
        check_runs(method, "horizontal")
