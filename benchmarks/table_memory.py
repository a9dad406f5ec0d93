"""Peak memory of reading a site's table against the table's size on disk.

Writes a CSV of about ``--mb`` megabytes (20 feature columns of six decimals
and a label column, seeded), then in a fresh interpreter reads it as a run
reads a site's table (``read_table``, the features as float32, the labels
as codes) and reports the process's peak resident memory (Linux: VmHWM): in
all, and above the interpreter with fedmosaic imported, each over the file's
size.

Usage: python benchmarks/table_memory.py [--mb 200] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from _common import emit, machine

FEATURES = 20
ROW_BYTES = FEATURES * 10 + 4
"""About the bytes of one row: a feature is ``-0.123456,``, the label ``yes`` and a line break."""

READ = r"""
import json, re, sys, time
from fedmosaic.data.tables.read import read_table
# VmHWM, this process's own peak (getrusage's ru_maxrss can keep the peak of the process that started it)
peak = lambda: int(re.search(r"VmHWM:\s+(\d+) kB", open("/proc/self/status").read()).group(1)) * 1024
baseline, start = peak(), time.perf_counter()
table = read_table(sys.argv[1], "tables.sites.0.file")
table.numbers([f"f{k}" for k in range(int(sys.argv[2]))])
table.categories("label", ["no", "yes"], "tables.classes")
print(json.dumps({"baseline_bytes": baseline, "peak_bytes": peak(), "seconds": time.perf_counter() - start}))
"""


def write_table(path: Path, megabytes: float, seed: int = 0) -> int:
    """Write a CSV of about ``megabytes`` MB; return its size in bytes."""
    rows = int(megabytes * 1e6 / ROW_BYTES)
    rng = np.random.default_rng(seed)
    with path.open("w") as handle:
        handle.write(",".join([*(f"f{k}" for k in range(FEATURES)), "label"]) + "\n")
        for start in range(0, rows, 50_000):
            block = rng.normal(size=(min(50_000, rows - start), FEATURES))
            labels = rng.choice(["no", "yes"], size=len(block))
            lines = (",".join(f"{v:.6f}" for v in row) + "," + label for row, label in zip(block, labels, strict=True))
            handle.write("\n".join(lines) + "\n")
    return path.stat().st_size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=200.0)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        table = Path(folder) / "site.csv"
        size = write_table(table, args.mb)
        done = subprocess.run(
            [sys.executable, "-c", READ, str(table), str(FEATURES)], capture_output=True, text=True, check=True
        )
    measured = json.loads(done.stdout)
    emit(
        {
            "benchmark": "table_memory",
            "file_mb": round(size / 1e6, 1),
            "peak_mb": round(measured["peak_bytes"] / 1e6, 1),
            "interpreter_mb": round(measured["baseline_bytes"] / 1e6, 1),
            "peak_over_file": round(measured["peak_bytes"] / size, 2),
            "reading_over_file": round((measured["peak_bytes"] - measured["baseline_bytes"]) / size, 2),
            "seconds": round(measured["seconds"], 1),
            "machine": machine(),
        },
        args.out,
    )


if __name__ == "__main__":
    main()
