"""fedmosaic's SuperNode launcher caps Flower 1.42's fixed waits, and refuses a Flower it was not written for."""

import inspect
import sys
import time
from collections.abc import Iterator
from importlib.metadata import version
from types import ModuleType

import pytest
from flwr.supernode import start_client_internal

from fedmosaic.deploy.processes import LocalDeployment
from fedmosaic.deploy.supernode import (
    FLOWER_WAITS,
    IDLE_AFTER_S,
    IDLE_POLL_INTERVAL_S,
    POLL_INTERVAL_S,
    PULL_FUNCTION,
    CappedTime,
    cap_flower_waits,
    check_flower,
    main,
    sleeps,
    watch_stored_messages,
)
from fedmosaic.deploy.wake import WakeListener, new_wake_name
from fedmosaic.errors import ConfigError, FedmosaicError

SOURCE = inspect.getsource(start_client_internal)


class NoMoreWaits(Exception):
    """Ends a Flower loop after the waits a test looks at."""


@pytest.fixture
def flower_module() -> Iterator[ModuleType]:
    """Flower's SuperNode module, its own ``time`` and message pull given back after the test."""
    originals = {name: vars(start_client_internal)[name] for name in ("time", PULL_FUNCTION)}
    yield start_client_internal
    vars(start_client_internal).update(originals)


def test_the_launcher_caps_each_of_flowers_waits(flower_module: ModuleType) -> None:
    # Prepare
    waits: list[float] = []
    cap_flower_waits(0.2, sleep=waits.append)

    # Execute
    flower_module.time.sleep(3)
    flower_module.time.sleep(0.5)
    flower_module.time.sleep(0.1)

    # Assert
    assert waits == [0.2, 0.2, 0.1]


def test_flowers_reply_wait_sleeps_the_cap(flower_module: ModuleType) -> None:
    """Flower's own ``_push_messages`` checks for the reply every 0.5 s; capped, every 0.2 s."""

    # Prepare: a node state without a reply for two checks
    class NoReplyYet:
        checks = 0

        def get_messages_legacy(self, is_reply: bool) -> list[object]:
            self.checks += 1
            if self.checks > 2:
                raise NoMoreWaits
            return []

    waits: list[float] = []
    cap_flower_waits(0.2, sleep=waits.append)

    # Execute
    with pytest.raises(NoMoreWaits):
        flower_module._push_messages(state=NoReplyYet(), object_store=None, send=None, push_object=None)

    # Assert
    assert waits == [0.2, 0.2]


def test_every_other_function_of_time_is_the_real_one(flower_module: ModuleType) -> None:
    cap_flower_waits(POLL_INTERVAL_S)

    assert isinstance(flower_module.time, CappedTime)
    assert flower_module.time.time is time.time
    assert flower_module.time.monotonic is time.monotonic
    assert flower_module.time.perf_counter is time.perf_counter
    assert time.sleep is not flower_module.time.sleep


def test_the_installed_flower_has_exactly_the_waits_the_launcher_caps() -> None:
    assert sleeps(SOURCE) == FLOWER_WAITS
    check_flower(version("flwr"), SOURCE)


@pytest.mark.parametrize("installed", ["1.43.0", "1.4.2", "2.42.0"])
def test_another_flower_release_is_refused_on_one_line(installed: str) -> None:
    with pytest.raises(FedmosaicError, match=rf"waits of flwr 1\.42\.x, but flwr {installed} is installed") as error:
        check_flower(installed, SOURCE)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize(
    ("change", "found"),
    [
        (("time.sleep(3)", "pass"), "'start_client_internal'"),  # the wait after an empty poll is gone
        (("time.sleep(3)", "time.sleep(30)"), "30.0"),  # a longer wait
        (("time.sleep(3)", "time.sleep(backoff)"), "None"),  # a computed wait
        (
            ("def _insert_message(", "def _wait():\n    time.sleep(10)\n\n\ndef _insert_message("),
            "'_wait'",
        ),  # a new one
    ],
)
def test_a_flower_whose_sleeps_changed_is_refused_on_one_line(change: tuple[str, str], found: str) -> None:
    # Prepare
    old, new = change
    assert old in SOURCE

    # Execute
    with pytest.raises(FedmosaicError, match="no longer has the waits") as error:
        check_flower(version("flwr"), SOURCE.replace(old, new, 1))

    # Assert
    assert found in str(error.value)
    assert "\n" not in str(error.value)


def test_the_launcher_runs_flowers_supernode_with_its_arguments_and_the_waits_capped(
    flower_module: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Prepare
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    seen: list[tuple[list[str], float]] = []

    def supernode() -> None:
        seen.append((list(sys.argv), flower_module.time.cap))

    # Execute
    main(["--poll-interval", "0.5", "--insecure", "--superlink", "127.0.0.1:9092"], run=supernode)
    main(["--insecure"], run=supernode)

    # Assert
    assert seen == [
        (["flower-supernode", "--insecure", "--superlink", "127.0.0.1:9092"], 0.5),
        (["flower-supernode", "--insecure"], POLL_INTERVAL_S),
    ]


@pytest.mark.parametrize("value", ["0", "0.01", "-1", "3.5", "nan", "inf", "soon"])
def test_the_launcher_refuses_a_bad_interval_on_one_line_before_starting_flower(
    value: str, flower_module: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    # Prepare
    started: list[bool] = []

    # Execute
    with pytest.raises(SystemExit) as exit_:
        main([f"--poll-interval={value}", "--insecure"], run=lambda: started.append(True))

    # Assert
    assert exit_.value.code == 2
    assert capsys.readouterr().err == (
        f"error: --poll-interval: must be seconds from 0.05 to 3 (3 keeps Flower's own waits), got {value!r}\n"
    )
    assert started == []
    assert flower_module.time is time


def test_flowers_own_waits_are_one_setting_away(flower_module: ModuleType) -> None:
    waits: list[float] = []
    cap_flower_waits(3.0, sleep=waits.append)

    flower_module.time.sleep(3)
    flower_module.time.sleep(0.5)

    assert waits == [3, 0.5]


def test_a_local_deployment_refuses_a_bad_interval_before_starting_anything(tmp_path) -> None:
    with pytest.raises(ConfigError, match=r"^--poll-interval: must be seconds from 0\.05 to 3"):
        LocalDeployment(tmp_path / "deployment", 2, poll_interval_s=0.0)
    assert not (tmp_path / "deployment").exists()


def test_an_idle_node_waits_at_most_a_second_and_a_stored_message_makes_it_busy_again() -> None:
    # Prepare: a node started at time 0
    waits: list[float] = []
    now = [0.0]
    capped = CappedTime(0.2, sleep=waits.append, clock=lambda: now[0])

    # Execute: empty polls (Flower's 3 s) while busy, once idle, and after a message
    capped.sleep(3)
    now[0] = IDLE_AFTER_S - 0.1
    capped.sleep(3)
    now[0] = IDLE_AFTER_S
    capped.sleep(3)
    capped.sleep(0.5)
    capped.message_stored()
    capped.sleep(3)

    # Assert
    assert waits == [0.2, 0.2, IDLE_POLL_INTERVAL_S, 0.5, 0.2]


@pytest.mark.parametrize(("wake_name", "signals"), [("node-0-wake", ["node-0-wake"]), (None, [])])
def test_a_stored_message_marks_the_node_busy_and_signals_its_worker_if_named(
    wake_name: str | None, signals: list[str], flower_module: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Prepare: Flower's pull finds a message (run 7), then none
    runs = iter([7, None])
    monkeypatch.setattr(flower_module, PULL_FUNCTION, lambda **kwargs: next(runs))
    now, waits = [0.0], []
    capped = CappedTime(0.2, sleep=waits.append, clock=lambda: now[0])
    sent: list[str] = []
    watch_stored_messages(capped, wake_name, wake=sent.append)
    pull = getattr(flower_module, PULL_FUNCTION)

    # Execute
    now[0] = 100.0
    pulled = [pull(state=None), pull(state=None)]
    now[0] = 100.0 + IDLE_AFTER_S - 0.1
    capped.sleep(3)

    # Assert: busy since the message at 100 s, signalled once
    assert pulled == [7, None]
    assert sent == signals
    assert waits == [0.2]


def test_the_launcher_passes_the_wake_name_and_keeps_flowers_arguments(
    flower_module: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Prepare
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    monkeypatch.setattr(flower_module, PULL_FUNCTION, lambda **kwargs: 3)
    name = new_wake_name()
    seen: list[list[str]] = []

    def supernode() -> None:
        seen.append(list(sys.argv))
        getattr(flower_module, PULL_FUNCTION)()

    # Execute
    with WakeListener(name) as worker:
        main(["--wake-name", name, "--poll-interval=0.5", "--insecure"], run=supernode)
        woken = worker.wait(5.0)

    # Assert
    assert seen == [["flower-supernode", "--insecure"]]
    assert flower_module.time.cap == 0.5
    assert woken


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--wake-name"], "error: --wake-name: needs a value\n"),
        (["--wake-name="], "error: --wake-name: must be a non-empty name\n"),
    ],
)
def test_the_launcher_refuses_a_bad_wake_name_on_one_line(
    argv: list[str], message: str, flower_module: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(argv, run=lambda: None)

    assert exit_.value.code == 2
    assert capsys.readouterr().err == message


def test_a_flower_without_the_function_that_stores_messages_is_refused_on_one_line() -> None:
    with pytest.raises(FedmosaicError, match=f"and no {PULL_FUNCTION}") as error:
        check_flower(version("flwr"), SOURCE.replace(f"def {PULL_FUNCTION}(", "def _renamed(", 1))
    assert "\n" not in str(error.value)
