"""The method contract: every registered method passes the same checks, as scikit-learn's estimator checks.

The checks are parametrised from :data:`~fedmosaic.methods.registry.METHODS`
itself, so a new method is covered without editing this file. Each method is
built on every tiny task of its kind (``tests/methods/tiny_tasks.py``) with its
default parameters, made small where it shares a name with
:data:`tiny_tasks.SMALL`, and

- runs three rounds in process, on the CPU and, where one is present, on
  CUDA (``train.device``), its messages and states NumPy arrays on either;
- killed at the end of round 2 (before its checkpoint) and resumed, ends
  exactly like an uninterrupted run: the same round records, and the same
  server (every attribute, not only what ``state_dict`` saves: an attribute
  forgotten there differs after a resume) and client states;
- drops malformed replies with their reason, without crashing;
- refuses bad parameters on one line naming the field;
- saves its server and client states to a checkpoint file and restores them
  bit for bit;
- is acted on by every runtime feature it declares (``Capabilities``): local
  DP-SGD reports its epsilon, client-level DP its epsilon every round, a
  robust rule is called every round, an attack alters its replies, secure
  aggregation masks its uploads and ends where the plain run ends.

That the configuration refuses the features a method does not declare is
checked in ``tests/experiments/test_capabilities.py``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from fedmosaic.devices import computing_on
from fedmosaic.errors import ConfigError
from fedmosaic.experiments.config import load_config
from fedmosaic.federation import (
    Federation,
    Grid,
    InProcessGrid,
    Message,
    RoundContext,
    RoundRecord,
    Schedule,
    ServerLogic,
)
from fedmosaic.federation.checkpoint import Checkpoint, load_checkpoint, save_checkpoint
from fedmosaic.federation.hostile import HostileGrid
from fedmosaic.federation.privacy import GaussianMechanism, PrivacyBudget
from fedmosaic.federation.robust import Aggregator, Median
from fedmosaic.federation.secagg import SecureAggregation, SecureClient
from fedmosaic.federation.secagg.protocol import MASKED
from fedmosaic.methods.base import Method, MethodParams
from fedmosaic.methods.horizontal.fedavg.client import FedAvgClient
from fedmosaic.methods.horizontal.fedavg.params import FedAvgParams
from fedmosaic.methods.horizontal.fedavg.server import FedAvgServer
from fedmosaic.methods.horizontal.task import HorizontalTask
from fedmosaic.methods.registry import METHODS

from .state_equality import assert_same
from .tiny_tasks import VARIANTS, minimal_source, tiny_params, tiny_task

ROUNDS = 3
SEED = 7
CASES = [(name, variant) for name, method in METHODS.items() for variant in VARIANTS[method.kind]]
"""Every registered method on every tiny task of its kind."""


def _case_id(name: str, variant: str) -> str:
    return name if len(VARIANTS[METHODS[name].kind]) == 1 else f"{name}-{variant}"


IDS = [_case_id(name, variant) for name, variant in CASES]
NAMES = list(METHODS)
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA"))]
"""The devices every method runs on (``train.device``); CUDA only where one is present."""


@dataclass
class Run:
    """A finished federation: its server, its in-process grid and its round records."""

    server: ServerLogic
    grid: InProcessGrid
    history: list[RoundRecord]


class Interrupted(Exception):
    """Stands for the process being killed."""


CORRUPTIONS: tuple[tuple[str, Callable[[Message], Any]], ...] = (
    ("not a message", lambda reply: "garbage"),
    ("NaN", lambda reply: _with_first_float(reply, np.nan)),
    ("wrong shape", lambda reply: _with_first_longer(reply)),
    ("unknown name", lambda reply: _replaced(reply, {"injected": np.zeros(2, np.float32)})),
)
"""Replies a broken client sends instead of its own, one kind after the other."""


class CorruptingGrid(Grid):
    """Replaces every reply of client ``victim`` by a malformed one; records the rounds it did."""

    def __init__(self, inner: InProcessGrid, victim: int) -> None:
        self.inner, self.victim = inner, victim
        self.corrupted: list[tuple[int, str]] = []

    def send_and_receive(self, messages: Mapping[int, Message], rnd: int, failing: frozenset[int]) -> dict[int, Any]:
        replies: dict[int, Any] = dict(self.inner.send_and_receive(messages, rnd, failing))
        if self.victim in replies:
            kind, corrupt = CORRUPTIONS[len(self.corrupted) % len(CORRUPTIONS)]
            replies[self.victim] = corrupt(replies[self.victim])
            self.corrupted.append((rnd, kind))
        return replies


def _replaced(reply: Message, arrays: dict[str, np.ndarray]) -> Message:
    return Message(
        arrays={**reply.arrays, **arrays}, config=dict(reply.config), metrics=dict(reply.metrics), kind=reply.kind
    )


def _with_first_longer(reply: Message) -> Message:
    if not reply.arrays:  # nothing to reshape: send a name the method never declared instead
        return _replaced(reply, {"injected": np.zeros(2, np.float32)})
    name, array = next(iter(reply.arrays.items()))
    return _replaced(reply, {name: np.append(array, array.flat[:1])})


def _with_first_float(reply: Message, value: float) -> Message:
    floats = [n for n, a in reply.arrays.items() if a.dtype.kind == "f" and a.size]
    if not floats:  # nothing to poison: send a name the method never declared instead
        return _replaced(reply, {"injected": np.zeros(2, np.float32)})
    poisoned = np.array(reply.arrays[floats[0]])
    poisoned.flat[0] = value
    return _replaced(reply, {floats[0]: poisoned})


def _run(
    method: Method,
    variant: str,
    *,
    checkpoint: Path | None = None,
    resume: bool = False,
    wrap: Callable[[InProcessGrid], Grid] | None = None,
    interrupt_at: int | None = None,
    aggregator: Aggregator | None = None,
    privacy: PrivacyBudget | None = None,
    train: dict[str, Any] | None = None,
    secure: SecureAggregation | None = None,
    device: str = "cpu",
) -> Run:
    """Build ``method`` afresh on the tiny task ``variant`` and run it in process on ``device``.

    With ``interrupt_at``, the run is killed at the end of that round's work,
    before the round is recorded and checkpointed (its clients have already
    handled its messages).
    """
    task, clients = tiny_task(variant, ROUNDS)
    if train is not None:
        task = replace(task, train=task.train.model_copy(update=train))
    with computing_on(device):
        server, factory = method.build(task, tiny_params(method))
        if interrupt_at is not None:
            server.run_round = _interrupting(server.run_round, interrupt_at)  # type: ignore[method-assign]
        grid = InProcessGrid(factory if secure is None else lambda client: SecureClient(factory(client)), SEED)
        schedule = Schedule(num_clients=clients)
        reaching = grid if wrap is None else wrap(grid)
        federation = Federation(
            server,
            reaching,
            schedule,
            seed=SEED,
            rounds=ROUNDS,
            checkpoint=checkpoint,
            fingerprint="contract",
            aggregator=aggregator,
            privacy=privacy,
            secure=secure,
        )
        return Run(server, grid, federation.run(resume=resume))


def _interrupting(run_round: Callable[[RoundContext], dict[str, float]], at: int) -> Callable[..., dict[str, float]]:
    def interrupted(ctx: RoundContext) -> dict[str, float]:
        metrics = run_round(ctx)
        if ctx.round == at:
            raise Interrupted(f"killed at the end of round {at}")
        return metrics

    return interrupted


@functools.cache
def _uninterrupted(name: str, variant: str, device: str = "cpu") -> Run:
    """The uninterrupted run of method ``name`` on ``device`` (shared by the checks; never modified)."""
    return _run(METHODS[name], variant, device=device)


def _comparable(history: list[RoundRecord]) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.to_dict().items() if k != "wall_time_s"} for r in history]


def assert_resumes_exactly(
    method: Method, variant: str, checkpoint: Path, expected: Run, train: dict[str, Any] | None = None
) -> None:
    """Kill ``method`` at the end of round 2, resume it, and compare everything with ``expected`` (run with ``train``)."""
    with pytest.raises(Interrupted):
        _run(method, variant, checkpoint=checkpoint, interrupt_at=2, train=train)
    resumed = _run(method, variant, checkpoint=checkpoint, resume=True, train=train)
    assert _comparable(resumed.history) == _comparable(expected.history)
    assert_same(resumed.server, expected.server)
    assert_same(resumed.grid.client_states(), expected.grid.client_states(), "client_states")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(("name", "variant"), CASES, ids=IDS)
def test_it_builds_and_runs_rounds_in_process(name: str, variant: str, device: str) -> None:
    # Execute
    run = _uninterrupted(name, variant, device)

    # Assert: every round ran, nothing rejected, evaluated, with finite metrics
    assert [r.status for r in run.history] == ["ok"] * ROUNDS
    assert not any(r.rejected for r in run.history)
    assert all(np.isfinite(list(r.metrics.values())).all() for r in run.history)
    assert 0.0 <= run.history[-1].metrics["accuracy"] <= 1.0
    # ... and what it keeps between messages is device-free, as what it sends
    states = [run.server.state_dict(), *run.grid.client_states().values()]
    assert all(isinstance(array, np.ndarray) for state in states for array in state.arrays.values())


@pytest.mark.parametrize(("name", "variant"), CASES, ids=IDS)
def test_an_interrupted_run_resumes_exactly_like_an_uninterrupted_one(name: str, variant: str, tmp_path: Path) -> None:
    assert_resumes_exactly(METHODS[name], variant, tmp_path / "checkpoint.npz", _uninterrupted(name, variant))


@pytest.mark.parametrize(("name", "variant"), CASES, ids=IDS)
def test_malformed_replies_are_dropped_with_their_reason_never_crashing(name: str, variant: str) -> None:
    # Prepare
    grids: list[CorruptingGrid] = []

    def corrupting(grid: InProcessGrid) -> Grid:
        grids.append(CorruptingGrid(grid, victim=0))
        return grids[0]

    # Execute
    run = _run(METHODS[name], variant, wrap=corrupting)

    # Assert: the run goes on; each round with a corrupted reply of client 0 records its rejection, on one line
    assert len(run.history) == ROUNDS
    assert grids[0].corrupted or not any(r.trips for r in run.history)  # or the method talks to no client
    corrupted_rounds = sorted({rnd for rnd, _ in grids[0].corrupted})
    assert [r.round for r in run.history if "0" in r.rejected] == corrupted_rounds
    reasons = [r.rejected["0"] for r in run.history if "0" in r.rejected]
    assert all(reason and "\n" not in reason for reason in reasons)
    assert all("0" not in r.rejected or r.replies >= 1 for r in run.history)


@pytest.mark.parametrize("name", NAMES)
def test_bad_parameters_are_refused_on_one_line_naming_the_field(name: str) -> None:
    # Prepare
    method = METHODS[name]
    fields = method.params.model_fields
    given = tiny_params(method).model_dump(mode="json", exclude_defaults=True)

    def refusal(params: dict[str, Any]) -> ConfigError | None:
        try:
            load_config(minimal_source(method, params={**given, **params}))
        except ConfigError as error:
            return error
        return None

    # Execute / Assert: an unknown key, then a value of the wrong type for each parameter
    unknown = refusal({"no_such_parameter": 1})
    assert unknown is not None
    assert unknown.field == "runs.0.params.no_such_parameter"
    for field in fields:
        error = next(e for e in map(refusal, ({field: v} for v in WRONG)) if e is not None)
        assert error.field.startswith(f"runs.0.params.{field}"), str(error)
        assert "\n" not in str(error)


WRONG: tuple[Any, ...] = (-1, "?", [1], {"?": 1}, True)
"""Values one of which every parameter refuses (TOML has no other kinds of values)."""


class ForeignParams(MethodParams):
    """The parameters of no registered method."""


@pytest.mark.parametrize("name", NAMES)
def test_it_refuses_to_be_built_from_another_methods_parameters(name: str) -> None:
    # Prepare
    method = METHODS[name]
    task, _ = tiny_task(VARIANTS[method.kind][0], ROUNDS)

    # Execute
    with pytest.raises(ConfigError) as info:
        method.build(task, ForeignParams())

    # Assert
    assert f"method '{name}' takes {method.params.__name__}" in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(("name", "variant"), CASES, ids=IDS)
def test_its_server_and_client_states_survive_a_checkpoint_file_bit_for_bit(
    name: str, variant: str, tmp_path: Path
) -> None:
    # Prepare
    method = METHODS[name]
    run = _uninterrupted(name, variant)
    server, clients = run.server.state_dict(), run.grid.client_states()
    path = tmp_path / "checkpoint.npz"

    # Execute: through the file, into a server built afresh
    save_checkpoint(Checkpoint(fingerprint="contract", server=server, clients=clients), path)
    loaded = load_checkpoint(path)
    task, _ = tiny_task(variant, ROUNDS)
    fresh, _ = method.build(task, tiny_params(method))
    fresh.load_state_dict(loaded.server)

    # Assert
    assert_same(loaded.server, server, "server")
    assert_same(loaded.clients, clients, "clients")
    assert_same(fresh.state_dict(), server, "restored server")


DECLARED = [(name, variant, capability) for name, variant in CASES for capability in METHODS[name].supports.names()]
"""Every runtime feature a method declares, on each of its tiny tasks."""


class CountingMedian(Median):
    """The median, counting its calls."""

    calls = 0

    def aggregate(self, contributions, reference, rng):  # type: ignore[no-untyped-def]
        self.calls += 1
        return super().aggregate(contributions, reference, rng)


class Spy(Grid):
    """Passes messages to ``inner`` and keeps the replies of client 0 in order."""

    def __init__(self, inner: Grid) -> None:
        self.inner = inner
        self.replies: list[Any] = []

    def send_and_receive(self, messages: Mapping[int, Message], rnd: int, failing: frozenset[int]) -> dict[int, Any]:
        replies = self.inner.send_and_receive(messages, rnd, failing)
        self.replies += [replies[0]] if 0 in replies else []
        return replies


def _altered_by(method: Method, variant: str, attack: str) -> int:
    """How many of client 0's replies ``attack`` alters when client 0 is hostile."""
    spies: dict[str, Spy] = {}

    def hostile(grid: InProcessGrid) -> Grid:
        spies["honest"] = Spy(grid)
        spies["sent"] = Spy(HostileGrid(spies["honest"], frozenset({0}), attack, SEED))
        return spies["sent"]

    _run(method, variant, wrap=hostile)
    pairs = zip(spies["honest"].replies, spies["sent"].replies, strict=False)
    return sum(
        a.arrays.keys() != b.arrays.keys() or any(not np.array_equal(a.arrays[k], b.arrays[k]) for k in a.arrays)
        for a, b in pairs
    )


@pytest.mark.parametrize(
    ("name", "variant", "capability"), DECLARED, ids=[f"{_case_id(n, v)}-{c}" for n, v, c in DECLARED]
)
def test_the_runtime_features_it_declares_act_on_its_runs(
    name: str, variant: str, capability: str, tmp_path: Path
) -> None:
    method = METHODS[name]
    if capability == "dp_sgd":
        history = _run(method, variant, train={"dp_noise_multiplier": 1.0}).history
        assert all(r.metrics["dp_sgd_epsilon_max"] > 0 for r in history)
    elif capability == "client_dp":
        history = _run(
            method, variant, aggregator=GaussianMechanism(1.0, 0.5), privacy=PrivacyBudget(0.5, 1e-5)
        ).history
        epsilons = [r.metrics["dp_epsilon"] for r in history]
        assert len(epsilons) == ROUNDS
        assert epsilons == sorted(set(epsilons))
    elif capability == "kept_optimizer":
        kept = {"optimizer_state": "kept"}
        run = _run(method, variant, train=kept)
        assert any(any(k.startswith("optimizer/") for k in s.arrays) for s in run.grid.client_states().values())
        assert_resumes_exactly(method, variant, tmp_path / "checkpoint.npz", run, train=kept)
    elif capability == "robust_aggregation":
        rule = CountingMedian()
        _run(method, variant, aggregator=rule)
        assert rule.calls >= ROUNDS
    elif capability == "secure_aggregation":
        spies: dict[str, Spy] = {}
        secure = _run(
            method, variant, secure=SecureAggregation(threshold=0.5), wrap=lambda g: spies.setdefault("up", Spy(g))
        )
        assert any(MASKED in reply.arrays for reply in spies["up"].replies)
        plain = _uninterrupted(name, variant).server.state_dict().arrays
        for key, array in secure.server.state_dict().arrays.items():
            np.testing.assert_allclose(array, plain[key], atol=1e-4, err_msg=key)
    else:
        attack = {"update_attacks": "scale", "graph_attacks": "random-graph"}[capability]
        assert _altered_by(method, variant, attack) > 0


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


def test_the_resume_check_catches_a_field_forgotten_in_state_dict(tmp_path: Path) -> None:
    # Prepare: a method whose server forgets a field; its results do not even depend on it
    method = Method("forgetful", "FedAvg with a forgotten counter", "classification", FedAvgParams, _build_forgetful)

    # Execute / Assert
    with pytest.raises(AssertionError, match="rounds_seen"):
        assert_resumes_exactly(method, "horizontal", tmp_path / "checkpoint.npz", _run(method, "horizontal"))
