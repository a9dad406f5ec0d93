"""CPU seconds of a command and of every process it starts, those it never waits for included.

``/usr/bin/time`` counts only the processes the command waits for; Ray's
head processes and workers, and the processes Flower's SuperExec starts,
are never waited for by pytest, so their CPU goes uncounted. This program
runs the command as a child subreaper (Linux): every orphaned descendant is
re-parented to it and reaped here, so the kernel adds its CPU to this
process's children. It prints the user and system seconds of them all, the
command's wall time, and the time until the last descendant exited; the exit
status is the command's. On a busy machine the CPU seconds, unlike the wall
time, stay close to what an idle one would use.

Usage: python benchmarks/cpu_of.py COMMAND [ARG ...]
  e.g. python benchmarks/cpu_of.py python -m pytest -n 0 -m slow tests/experiments/test_engines.py
"""

from __future__ import annotations

import ctypes
import os
import resource
import subprocess
import sys
import time

PR_SET_CHILD_SUBREAPER = 36
"""``prctl`` option (linux/prctl.h): orphaned descendants are re-parented to this process."""


def main(command: list[str]) -> int:
    if not command:
        print("usage: python benchmarks/cpu_of.py COMMAND [ARG ...]", file=sys.stderr)
        return 2
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        print(f"error: prctl(PR_SET_CHILD_SUBREAPER) failed: {os.strerror(ctypes.get_errno())}", file=sys.stderr)
        return 1
    began = time.monotonic()
    process = subprocess.Popen(command)
    status, wall = 1, 0.0
    while True:
        try:
            pid, wait_status = os.waitpid(-1, 0)
        except ChildProcessError:  # no descendant left
            break
        if pid == process.pid:
            status, wall = os.waitstatus_to_exitcode(wait_status), time.monotonic() - began
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(
        f"cpu_of: {usage.ru_utime + usage.ru_stime:.1f} s CPU (user {usage.ru_utime:.1f} s, "
        f"system {usage.ru_stime:.1f} s); command {wall:.1f} s wall; "
        f"last descendant exited after {time.monotonic() - began:.1f} s",
        file=sys.stderr,
    )
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
