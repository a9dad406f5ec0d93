"""Run one test (or a set) N times in a row, idle or under a CPU load, and count the verdicts.

A test whose verdict depends on the machine's speed passes on a loaded
machine and fails on an idle one, or the reverse; running it in a loop both
ways finds it before CI does. The load is ``--load`` processes that spin on
a core each for as long as the loop runs.

Usage::

    python scripts/loop_test.py TEST_ID [TEST_ID ...] [--count 10] [--load 3]

Prints one line per run and a closing ``N passed, N failed`` line; exits
non-zero when any run failed.
"""

from __future__ import annotations

import argparse
import multiprocessing
import subprocess
import sys
import time


def spin() -> None:
    """Keep one core busy until killed (counting)."""
    count = 0
    while True:
        count += 1


def main() -> int:
    """Run the loop the command line asks for; return the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tests", nargs="+", help="pytest node ids")
    parser.add_argument("--count", type=int, default=10, help="runs of the tests (default 10)")
    parser.add_argument("--load", type=int, default=0, help="busy processes meanwhile (default 0: idle)")
    args = parser.parse_args()
    if args.count < 1 or args.load < 0:
        parser.error("--count must be at least 1 and --load at least 0")
    spinners = [multiprocessing.Process(target=spin, daemon=True) for _ in range(args.load)]
    for spinner in spinners:
        spinner.start()
    passed = failed = 0
    try:
        for run in range(1, args.count + 1):
            start = time.monotonic()
            code = subprocess.run(
                [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args.tests],
                capture_output=True,
                check=False,
            ).returncode
            passed, failed = passed + (code == 0), failed + (code != 0)
            verdict = "passed" if code == 0 else f"FAILED (pytest exit {code})"
            print(
                f"run {run}/{args.count} (load {args.load}): {verdict} in {time.monotonic() - start:.1f} s", flush=True
            )
    finally:
        for spinner in spinners:
            spinner.kill()
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
