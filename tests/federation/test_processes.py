"""WorkerPool: forked workers that serve requests, stream events and always stop."""

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from fedmosaic.federation.processes import WorkerFailed, WorkerPool


def _alive(pid: int) -> bool:
    """Whether ``pid`` is a running (not zombie) process."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in status


def _wait_gone(pids: list[int], seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not any(_alive(pid) for pid in pids):
            return True
        time.sleep(0.05)
    return False


def _square(request, emit):
    return request * request


def _sleep(request, emit):
    time.sleep(request)
    return request


def _count_up(request, emit):
    for step in range(request):
        emit(step)
    return "done"


def _fail(request, emit):
    raise ValueError("bad input\non two lines")


def test_each_worker_answers_its_requests() -> None:
    with WorkerPool(lambda index: _square, 3) as pool:
        for worker in range(3):
            pool.submit(worker, worker + 2)
        assert sorted(pool.results()) == [(0, 4), (1, 9), (2, 16)]
        assert pool.idle == [0, 1, 2]


def test_events_stream_back_before_the_result() -> None:
    seen = []
    with WorkerPool(lambda index: _count_up, 1) as pool:
        pool.submit(0, 3)
        results = list(pool.results(on_event=lambda worker, event: seen.append((worker, event))))
    assert seen == [(0, 0), (0, 1), (0, 2)]
    assert results == [(0, "done")]


def test_an_error_in_a_worker_is_one_line_with_the_traceback_as_a_note() -> None:
    with WorkerPool(lambda index: _fail, 1) as pool:
        pool.submit(0, None)
        with pytest.raises(WorkerFailed) as caught:
            list(pool.results())
    assert str(caught.value) == "ValueError: bad input on two lines"
    assert "Traceback" in caught.value.__notes__[0]


def test_a_worker_that_dies_is_reported() -> None:
    with WorkerPool(lambda index: _sleep, 1) as pool:
        pool.submit(0, 30)
        os.kill(pool.pids()[0], signal.SIGKILL)
        with pytest.raises(WorkerFailed, match="worker process 0 stopped unexpectedly"):
            list(pool.results())


def test_close_stops_every_worker() -> None:
    pool = WorkerPool(lambda index: _square, 2)
    pids = pool.pids()
    pool.close()
    assert _wait_gone(pids)


def test_an_interrupt_while_workers_are_busy_stops_them_at_once() -> None:
    # Prepare: two workers busy for 30 s, and a Ctrl-C in 0.3 s.
    pool = WorkerPool(lambda index: _sleep, 2)
    pids = pool.pids()
    pool.submit(0, 30)
    pool.submit(1, 30)
    # Execute: with Python's own Ctrl-C handler (whatever earlier tests in this process left installed),
    # installed before the Ctrl-C can come
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
    started = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt), pool:
            list(pool.results())
    finally:
        signal.signal(signal.SIGINT, previous)
    # Assert
    assert time.monotonic() - started < 10
    assert _wait_gone(pids)


def test_workers_die_with_a_killed_parent() -> None:
    # Prepare: a parent process that starts two workers and waits.
    script = (
        "import time\n"
        "from fedmosaic.federation.processes import WorkerPool\n"
        "pool = WorkerPool(lambda i: (lambda r, e: r), 2)\n"
        "print(*pool.pids(), flush=True)\n"
        "time.sleep(60)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=env)
    pids = [int(p) for p in parent.stdout.readline().split()]
    # Execute
    parent.kill()
    parent.wait()
    # Assert
    assert len(pids) == 2
    assert _wait_gone(pids)
