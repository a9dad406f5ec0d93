"""Independent runs (grid points, the runs of a comparison) in parallel processes, one progress display.

The processes are forked, so every task is a plain function of the progress
sink that sees the parent's prepared data without copying or pickling it;
only results and progress events travel back. Results come back in task
order, whatever order the tasks finish in, so the outputs are those of a
sequential run.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from fedmosaic.experiments.progress import ProgressSink
from fedmosaic.federation import RoundRecord
from fedmosaic.federation.processes import WorkerPool
from fedmosaic.threads import usable_cores

T = TypeVar("T")
Task = Callable[[ProgressSink], T]


def job_cores(cores: int | None, jobs: int, tasks: int) -> int | None:
    """The cores each of ``jobs`` parallel processes may use (``None``: all, when there is one job).

    Examples
    --------
    >>> job_cores(8, 2, 5), job_cores(8, 4, 2), job_cores(None, 1, 3)
    (4, 4, None)
    """
    running = max(1, min(jobs, tasks))
    if running == 1:
        return cores
    return max(1, (cores or usable_cores()) // running)


def run_in_processes(
    tasks: Sequence[Task[T]],
    jobs: int,
    progress: ProgressSink,
    *,
    labels: Sequence[str] | None = None,
    on_done: Callable[[int, int], None] | None = None,
) -> list[T]:
    """Run ``tasks`` in up to ``jobs`` processes and return their results in task order.

    Parameters
    ----------
    tasks : sequence of callable ProgressSink -> result
        Independent tasks; each reports its runs to the sink it is given.
        Results must be picklable.
    jobs : int
        Processes at most (never more than tasks).
    progress : ProgressSink
        Receives every task's events; run names are prefixed with the
        task's label so that concurrent runs stay apart.
    labels : sequence of str or None
        A short label per task (default: none).
    on_done : callable (task index, tasks done) -> None, optional
        Called in this process as each task finishes.

    Raises
    ------
    fedmosaic.federation.processes.WorkerFailed
        When a task raises (one line); the other tasks are stopped at once.

    Examples
    --------
    >>> from fedmosaic.experiments.progress import SilentProgress
    >>> run_in_processes([lambda p: 1, lambda p: 2, lambda p: 3], 2, SilentProgress())
    [1, 2, 3]
    """
    labels = list(labels) if labels is not None else [""] * len(tasks)
    results: list[Any] = [None] * len(tasks)
    pending = deque(range(len(tasks)))
    running: dict[int, int] = {}
    done = 0

    def forward(worker: int, event: tuple[Any, ...]) -> None:
        _forward(progress, labels[running[worker]], event)

    with WorkerPool(lambda index: _TaskRunner(tasks), max(1, min(jobs, len(tasks))), daemon=False) as pool:
        while pending or running:
            for worker in pool.idle:
                if not pending:
                    break
                running[worker] = pending.popleft()
                pool.submit(worker, running[worker])
            for worker, result in pool.results(on_event=forward, first=True):
                task = running.pop(worker)
                results[task] = result
                done += 1
                if on_done is not None:
                    on_done(task, done)
    return results


class _TaskRunner:
    """Runs task number ``request`` in a worker, streaming its progress events."""

    def __init__(self, tasks: Sequence[Task[Any]]) -> None:
        self._tasks = tasks

    def __call__(self, request: int, emit: Callable[[Any], None]) -> Any:
        return self._tasks[request](_EmittingProgress(emit))


class _EmittingProgress:
    """A progress sink that sends its events to the parent process."""

    def __init__(self, emit: Callable[[Any], None]) -> None:
        self._emit = emit

    def start_point(self, index: int, total: int, label: str) -> None:
        """Points are shown by the parent (tasks run one experiment each)."""

    def start_run(self, name: str, total_rounds: int) -> None:
        self._emit(("start_run", name, total_rounds))

    def advance(self, name: str, record: RoundRecord) -> None:
        self._emit(("advance", name, record))

    def finish_run(self, name: str) -> None:
        self._emit(("finish_run", name))


def _forward(progress: ProgressSink, label: str, event: tuple[Any, ...]) -> None:
    kind, name, *args = event
    getattr(progress, kind)(f"{label} {name}" if label else name, *args)
