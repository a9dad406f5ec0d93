"""The method contract: the checks every method passes, built-in or a plugin's (as scikit-learn's ``check_estimator``).

Each method is built on every tiny task of its kind
(:mod:`~fedmosaic.testing.tiny_tasks`) with its default parameters, made small
where they share a name with :data:`~fedmosaic.testing.tiny_tasks.SMALL`, and

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
- is acted on by every runtime feature it declares (``Capabilities``).

A failed check raises :class:`ContractError` naming the method, the check and
what differs (for states, the attribute). :func:`check_method` runs them all::

    from fedmosaic.testing import check_method
    check_method(my_method, tmp_path)
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Concatenate, ParamSpec

import numpy as np

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
from fedmosaic.testing.state_equality import assert_same
from fedmosaic.testing.tiny_tasks import VARIANTS, minimal_source, tiny_params, tiny_task

ROUNDS = 3
SEED = 7
WRONG: tuple[Any, ...] = (-1, "?", [1], {"?": 1}, True)
"""Values one of which every parameter refuses (TOML has no other kinds of values)."""


class ContractError(AssertionError):
    """A method breaks the contract: the message names the method, the check and what differs."""


@dataclass
class Run:
    """A finished federation: its server, its in-process grid and its round records."""

    server: ServerLogic
    grid: InProcessGrid
    history: list[RoundRecord]


class Interrupted(Exception):
    """Stands for the process being killed."""


def _require(ok: bool, method: Method, check: str, detail: str) -> None:
    if not ok:
        raise ContractError(f"{method.name}: {check}: {detail}")


P = ParamSpec("P")


def contract_check(check: Callable[Concatenate[Method, P], None]) -> Callable[Concatenate[Method, P], None]:
    """``check``, with anything the method's own code raises during it reported as a :class:`ContractError`.

    The message names the method and the check (the original error is chained), so a ``KeyError`` deep
    in a method's server reads as the contract it broke.
    """

    @functools.wraps(check)
    def checked(method: Method, /, *args: P.args, **kwargs: P.kwargs) -> None:
        try:
            check(method, *args, **kwargs)
        except ContractError:
            raise
        except Exception as error:
            detail = str(error).splitlines()[0] if str(error) else ""
            raise ContractError(f"{method.name}: {check.__name__}: raised {type(error).__name__}: {detail}") from error

    return checked


# --------------------------------------------------------------------------- running a method


def run_method(
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
        reaching = grid if wrap is None else wrap(grid)
        federation = Federation(
            server,
            reaching,
            Schedule(num_clients=clients),
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
def uninterrupted(method: Method, variant: str, device: str = "cpu") -> Run:
    """The uninterrupted run of ``method`` on ``device`` (shared by the checks; never modified)."""
    return run_method(method, variant, device=device)


def _comparable(history: list[RoundRecord]) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.to_dict().items() if k != "wall_time_s"} for r in history]


# --------------------------------------------------------------------------- the checks


@contract_check
def check_runs(method: Method, variant: str, device: str = "cpu") -> None:
    """Three rounds run, nothing rejected, finite metrics, an accuracy, and device-free states."""
    run = uninterrupted(method, variant, device)
    check = f"runs three rounds on {variant} ({device})"
    statuses = [r.status for r in run.history]
    _require(statuses == ["ok"] * ROUNDS, method, check, f"round statuses {statuses}")
    _require(not any(r.rejected for r in run.history), method, check, "replies of honest clients were rejected")
    finite = all(np.isfinite(list(r.metrics.values())).all() for r in run.history)
    _require(finite, method, check, "a metric is not finite")
    accuracy = run.history[-1].metrics.get("accuracy")
    _require(accuracy is not None and 0.0 <= accuracy <= 1.0, method, check, f"accuracy {accuracy!r}")
    states = [run.server.state_dict(), *run.grid.client_states().values()]
    stray = [name for state in states for name, a in state.arrays.items() if not isinstance(a, np.ndarray)]
    _require(not stray, method, check, f"states hold arrays that are not NumPy arrays: {stray[:3]}")


@contract_check
def check_resumes_exactly(
    method: Method, variant: str, folder: Path, expected: Run | None = None, train: dict[str, Any] | None = None
) -> None:
    """Killed at the end of round 2 and resumed from ``folder``, the run ends exactly as ``expected``.

    ``expected`` defaults to the uninterrupted run; with ``train``, both run
    with those training parameters.
    """
    check = f"resumes exactly on {variant}"
    checkpoint = folder / f"{method.name}-{variant}-checkpoint.npz"
    try:
        run_method(method, variant, checkpoint=checkpoint, interrupt_at=2, train=train)
        interrupted = False
    except Interrupted:
        interrupted = True
    _require(interrupted, method, check, "the run was not interrupted at round 2")
    resumed = run_method(method, variant, checkpoint=checkpoint, resume=True, train=train)
    expected = expected or uninterrupted(method, variant)
    _require(_comparable(resumed.history) == _comparable(expected.history), method, check, "round records differ")
    try:
        assert_same(resumed.server, expected.server)
        assert_same(resumed.grid.client_states(), expected.grid.client_states(), "client_states")
    except AssertionError as error:
        raise ContractError(f"{method.name}: {check}: {error} (an attribute not saved by state_dict?)") from None


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
        """Pass ``messages`` on; corrupt the victim's reply."""
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


def check_malformed_replies(method: Method, variant: str) -> None:
    """Malformed replies of client 0 are dropped with a one-line reason in their round, the run goes on."""
    check = f"drops malformed replies on {variant}"
    grids: list[CorruptingGrid] = []

    def corrupting(grid: InProcessGrid) -> Grid:
        grids.append(CorruptingGrid(grid, victim=0))
        return grids[0]

    try:
        run = run_method(method, variant, wrap=corrupting)
    except Exception as error:  # noqa: BLE001 - the check is that nothing a client sends crashes the server
        raise ContractError(f"{method.name}: {check}: crashed with {type(error).__name__}: {error}") from None
    _require(len(run.history) == ROUNDS, method, check, f"{len(run.history)} rounds ran, not {ROUNDS}")
    talked = bool(grids[0].corrupted) or not any(r.trips for r in run.history)
    _require(talked, method, check, "client 0 was never sent a message")
    corrupted_rounds = sorted({rnd for rnd, _ in grids[0].corrupted})
    rejected_rounds = [r.round for r in run.history if "0" in r.rejected]
    _require(
        rejected_rounds == corrupted_rounds,
        method,
        check,
        f"rejected in {rejected_rounds}, corrupted in {corrupted_rounds}",
    )
    reasons = [r.rejected["0"] for r in run.history if "0" in r.rejected]
    _require(all(reason and "\n" not in reason for reason in reasons), method, check, f"reasons {reasons}")


@contract_check
def check_bad_parameters(method: Method) -> None:
    """An unknown parameter, and a value of the wrong type for each, are refused on one line naming the field."""
    check = "refuses bad parameters"
    given = tiny_params(method).model_dump(mode="json", exclude_defaults=True)

    def refusal(params: dict[str, Any]) -> ConfigError | None:
        try:
            load_config(minimal_source(method, params={**given, **params}))
        except ConfigError as error:
            return error
        return None

    unknown = refusal({"no_such_parameter": 1})
    _require(unknown is not None, method, check, "an unknown parameter was accepted")
    assert unknown is not None
    _require(unknown.field == "runs.0.params.no_such_parameter", method, check, f"named {unknown.field!r}")
    for field in method.params.model_fields:
        error = next((e for e in map(refusal, ({field: v} for v in WRONG)) if e is not None), None)
        _require(error is not None, method, check, f"{field} accepted every one of {WRONG}")
        assert error is not None
        _require(error.field.startswith(f"runs.0.params.{field}"), method, check, f"{field}: {error}")
        _require("\n" not in str(error), method, check, f"{field}: the refusal is not one line")


class ForeignParams(MethodParams):
    """The parameters of no registered method."""


@contract_check
def check_foreign_parameters(method: Method) -> None:
    """Built from another method's parameters, it refuses on one line naming itself and its parameters' class."""
    task, _ = tiny_task(VARIANTS[method.kind][0], ROUNDS)
    try:
        method.build(task, ForeignParams())
    except ConfigError as error:
        expected = f"method '{method.name}' takes {method.params.__name__}"
        _require(expected in str(error) and "\n" not in str(error), method, "refuses foreign parameters", str(error))
        return
    raise ContractError(f"{method.name}: refuses foreign parameters: built from ForeignParams")


@contract_check
def check_checkpoint_round_trip(method: Method, variant: str, folder: Path) -> None:
    """The server and client states go through a checkpoint file and into a fresh server bit for bit."""
    run = uninterrupted(method, variant)
    server, clients = run.server.state_dict(), run.grid.client_states()
    path = folder / f"{method.name}-{variant}-states.npz"
    save_checkpoint(Checkpoint(fingerprint="contract", server=server, clients=clients), path)
    loaded = load_checkpoint(path)
    task, _ = tiny_task(variant, ROUNDS)
    fresh, _ = method.build(task, tiny_params(method))
    fresh.load_state_dict(loaded.server)
    try:
        assert_same(loaded.server, server, "server")
        assert_same(loaded.clients, clients, "clients")
        assert_same(fresh.state_dict(), server, "restored server")
    except AssertionError as error:
        raise ContractError(f"{method.name}: states survive a checkpoint on {variant}: {error}") from None


class CountingMedian(Median):
    """The median, counting its calls."""

    calls = 0

    def aggregate(self, contributions, reference, rng):  # type: ignore[no-untyped-def]
        """Count the call, then take the median."""
        self.calls += 1
        return super().aggregate(contributions, reference, rng)


class Spy(Grid):
    """Passes messages to ``inner`` and keeps the replies of client 0 in order."""

    def __init__(self, inner: Grid) -> None:
        self.inner = inner
        self.replies: list[Any] = []

    def send_and_receive(self, messages: Mapping[int, Message], rnd: int, failing: frozenset[int]) -> dict[int, Any]:
        """Pass ``messages`` on and keep client 0's reply."""
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

    run_method(method, variant, wrap=hostile)
    pairs = zip(spies["honest"].replies, spies["sent"].replies, strict=False)
    return sum(
        a.arrays.keys() != b.arrays.keys() or any(not np.array_equal(a.arrays[k], b.arrays[k]) for k in a.arrays)
        for a, b in pairs
    )


@contract_check
def check_capability(method: Method, variant: str, capability: str, folder: Path) -> None:
    """The runtime feature ``capability`` (a flag ``method.supports`` sets) acts on its runs."""
    check = f"honours {capability} on {variant}"
    if capability == "dp_sgd":
        history = run_method(method, variant, train={"dp_noise_multiplier": 1.0}).history
        _require(all(r.metrics.get("dp_sgd_epsilon_max", 0) > 0 for r in history), method, check, "no epsilon")
    elif capability == "client_dp":
        budget = PrivacyBudget(0.5, 1e-5)
        history = run_method(method, variant, aggregator=GaussianMechanism(1.0, 0.5), privacy=budget).history
        epsilons = [r.metrics.get("dp_epsilon") for r in history]
        growing = None not in epsilons and epsilons == sorted(set(epsilons))  # type: ignore[type-var]
        _require(len(epsilons) == ROUNDS and growing, method, check, f"epsilons {epsilons}")
    elif capability == "kept_optimizer":
        kept = {"optimizer_state": "kept"}
        run = run_method(method, variant, train=kept)
        states = run.grid.client_states().values()
        _require(any(any(k.startswith("optimizer/") for k in s.arrays) for s in states), method, check, "no state")
        check_resumes_exactly(method, variant, folder, run, train=kept)
    elif capability == "robust_aggregation":
        rule = CountingMedian()
        run_method(method, variant, aggregator=rule)
        _require(rule.calls >= ROUNDS, method, check, f"the rule was called {rule.calls} times in {ROUNDS} rounds")
    elif capability == "secure_aggregation":
        spies: dict[str, Spy] = {}
        secure = run_method(
            method, variant, secure=SecureAggregation(threshold=0.5), wrap=lambda g: spies.setdefault("up", Spy(g))
        )
        _require(any(MASKED in r.arrays for r in spies["up"].replies), method, check, "no upload was masked")
        plain = uninterrupted(method, variant).server.state_dict().arrays
        for key, array in secure.server.state_dict().arrays.items():
            close = np.allclose(array, plain[key], atol=1e-4, rtol=1e-7)
            _require(close, method, check, f"{key} differs from the plain run's")
    else:
        attack = {"update_attacks": "scale", "graph_attacks": "random-graph"}[capability]
        _require(_altered_by(method, variant, attack) > 0, method, check, f"'{attack}' altered no reply")


def check_method(method: Method, folder: Path) -> None:
    """Every check of the contract, on every tiny task of ``method``'s kind (files under ``folder``).

    Raises
    ------
    ContractError
        The first check that fails, naming the method, the check and what differs.
    """
    check_bad_parameters(method)
    check_foreign_parameters(method)
    for variant in VARIANTS[method.kind]:
        check_runs(method, variant)
        check_resumes_exactly(method, variant, folder)
        check_malformed_replies(method, variant)
        check_checkpoint_round_trip(method, variant, folder)
        for capability in method.supports.names():
            check_capability(method, variant, capability, folder)
