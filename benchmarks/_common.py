"""Helpers shared by the benchmark scripts: data folder and JSON output."""

from __future__ import annotations

import json
import os
import platform
import sys
from pathlib import Path
from typing import Any

import torch

REPO = Path(__file__).resolve().parents[1]


def default_data_dir() -> Path:
    """``$FEDMOSAIC_DATA``, else the ``shared/data`` folder beside the repository."""
    return Path(os.environ.get("FEDMOSAIC_DATA", REPO.parent / "shared" / "data"))


def machine() -> dict[str, Any]:
    """What the numbers were measured on."""
    return {
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
    }


def emit(document: dict[str, Any], out: Path | None) -> None:
    """Print ``document`` as JSON and, if ``out`` is given, write it there too."""
    text = json.dumps(document, indent=2)
    print(text)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text + "\n")
