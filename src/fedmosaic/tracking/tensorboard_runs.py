"""Write a run tree as TensorBoard event files: one folder per run under ``OUT/tensorboard/``.

Each run with metrics gets its own folder (nested as the runs are, names made path-safe), holding
every per-round metric as a scalar with the round as the step, the final metrics under ``final/``
at the last round, and the parameters as a text table. ``tensorboard --logdir OUT/tensorboard``
shows them side by side.
"""

from __future__ import annotations

import re
from pathlib import Path

from fedmosaic.tracking.records import TrackedRun

FOLDER = "tensorboard"
"""The event files' folder in an output folder."""


def write_tensorboard(tree: TrackedRun, out_dir: Path) -> Path:
    """Write ``tree``'s event files under ``out_dir / FOLDER``; that folder."""
    root = out_dir / FOLDER
    _write(tree, root)
    return root


def _write(run: TrackedRun, folder: Path) -> None:
    from torch.utils.tensorboard import SummaryWriter

    if run.history or run.final or run.params:
        writer = SummaryWriter(log_dir=str(folder))
        try:
            for step, row in run.history:
                for key, value in row.items():
                    writer.add_scalar(key, value, step)
            last = run.history[-1][0] if run.history else 0
            for key, value in run.final.items():
                writer.add_scalar(f"final/{key}", value, last)
            if run.params:
                table = "\n".join(f"| {key} | {value} |" for key, value in run.params.items())
                writer.add_text("params", "| parameter | value |\n|---|---|\n" + table, 0)
        finally:
            writer.close()
    for index, child in enumerate(run.children):
        _write(child, folder / f"{index:02d}-{path_safe(child.name)}")


def path_safe(name: str) -> str:
    """``name`` with every run of characters other than letters, digits, ``.``, ``-`` and ``_`` as one ``-``.

    Examples
    --------
    >>> path_safe("lr=0.1, seed=2")
    'lr-0.1-seed-2'
    """
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-") or "run"
