"""CPU seconds of a command and of every process it starts, those it never waits for included.

``/usr/bin/time`` counts only the processes the command waits for. Ray's
processes and workers, and the processes Flower's SuperExec starts, are never
waited for by pytest, and a process whose parent ignores ``SIGCHLD`` is reaped
with its usage discarded, so no parent's count ever holds it. This program
therefore reads every descendant's own CPU seconds from ``/proc`` four times a
second until it exits (each process counted once, by PID and start time), and
runs the command as a child subreaper (Linux), so that orphaned descendants
stay its descendants. It prints the total, the command's wall time, the
largest processes grouped by program, and, for comparison, what the reaped
processes' usage says. A process that lives less than a quarter of a second
may be missed; on a busy machine the CPU seconds, unlike the wall time, stay
close to what an idle one would use.

Usage: python scripts/cpu_of.py COMMAND [ARG ...]
  e.g. python scripts/cpu_of.py python -m pytest -n 0 -m slow tests/experiments/test_engines.py
"""

from __future__ import annotations

import ctypes
import os
import resource
import subprocess
import sys
import time
from collections import defaultdict
from dataclasses import dataclass

PR_SET_CHILD_SUBREAPER = 36
"""``prctl`` option (linux/prctl.h): orphaned descendants are re-parented to this process."""

INTERVAL_S = 0.25
"""Seconds between two readings of ``/proc``."""

TICKS = os.sysconf("SC_CLK_TCK")
"""Clock ticks per second, the unit of ``/proc/PID/stat``'s CPU times."""


@dataclass
class Seen:
    """A descendant: its program and the CPU seconds last read."""

    program: str
    cpu_s: float


def program_of(command_line: str) -> str:
    """A short name for a process: the Python module or script it runs, else its executable."""
    words = command_line.split()
    if not words:
        return "?"
    if "-m" in words[:-1]:
        return words[words.index("-m") + 1]
    if "-c" in words:
        return "python -c"
    scripts = [w for w in words[1:3] if not w.startswith("-")]
    name = scripts[0] if "python" in os.path.basename(words[0]) and scripts else words[0]
    return os.path.basename(name)


def read_processes() -> dict[int, tuple[int, str, float]]:
    """Every process now: PID -> (parent PID, start time in ticks as text, own CPU seconds)."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        found[int(entry)] = (int(fields[1]), fields[19], (int(fields[11]) + int(fields[12])) / TICKS)
    return found


def command_line(pid: int) -> str:
    """The process's command line, or an empty string once it is gone."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as source:
            return source.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def record_descendants(root: int, seen: dict[tuple[int, str], Seen]) -> int:
    """Update ``seen`` with the descendants of ``root`` now; return how many there are."""
    processes = read_processes()
    children: dict[int, list[int]] = {}
    for pid, (parent, _, _) in processes.items():
        children.setdefault(parent, []).append(pid)
    stack, count = list(children.get(root, [])), 0
    while stack:
        pid = stack.pop()
        _, started, cpu_s = processes[pid]
        key = (pid, started)
        if key not in seen:
            seen[key] = Seen(program_of(command_line(pid)), cpu_s)
        seen[key].cpu_s = cpu_s  # a process's CPU seconds only grow
        stack.extend(children.get(pid, []))
        count += 1
    return count


def reap(command_pid: int) -> int | None:
    """Reap every exited descendant without waiting; return the command's exit status once it is reaped."""
    status = None
    while True:
        try:
            pid, wait_status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return status
        if pid == 0:
            return status
        if pid == command_pid:
            status = os.waitstatus_to_exitcode(wait_status)


def main(command: list[str]) -> int:
    if not command:
        print("usage: python scripts/cpu_of.py COMMAND [ARG ...]", file=sys.stderr)
        return 2
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        print(f"error: prctl(PR_SET_CHILD_SUBREAPER) failed: {os.strerror(ctypes.get_errno())}", file=sys.stderr)
        return 1
    began = time.monotonic()
    process = subprocess.Popen(command)
    seen: dict[tuple[int, str], Seen] = {}
    status, wall = None, 0.0
    while True:
        alive = record_descendants(os.getpid(), seen)
        reaped = reap(process.pid)
        if reaped is not None:
            status, wall = reaped, time.monotonic() - began
        if status is not None and alive == 0:
            break
        time.sleep(INTERVAL_S)
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    by_program: defaultdict[str, float] = defaultdict(float)
    for process_seen in seen.values():
        by_program[process_seen.program] += process_seen.cpu_s
    print(
        f"cpu_of: {sum(by_program.values()):.1f} s CPU in {len(seen)} processes; command {wall:.1f} s wall; "
        f"last descendant exited after {time.monotonic() - began:.1f} s; "
        f"the reaped processes' usage says {usage.ru_utime + usage.ru_stime:.1f} s",
        file=sys.stderr,
    )
    for program, cpu_s in sorted(by_program.items(), key=lambda item: -item[1])[:12]:
        print(f"cpu_of: {cpu_s:8.1f} s  {program}", file=sys.stderr)
    return status if status is not None else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
