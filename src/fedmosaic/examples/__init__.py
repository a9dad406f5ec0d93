"""Example tables shipped with fedmosaic, for the own-data tutorial (``docs/own-data.md``).

``asia/``: three hospitals' tables sampled from the asia network, each
labelling different concepts (hospital 1 with its own graph belief), the
coordinator's test table and new patients to predict; ``vertical/``: two
parties holding different columns of partly the same patients; ``images/``:
three sites' own images (``.npz``) and a CNN of the user's own
(``mynets.py``, ``docs/own-model.md``); ``views/``: three cameras' own
views of partly the same digits (``.npz`` parties of a vertical task) and
each camera's CNN (``cameras.py``). Copy them with ``fedmosaic examples
DEST``; :mod:`fedmosaic.examples.generate` wrote them.
"""

from __future__ import annotations

import shutil
from importlib import resources
from pathlib import Path

from fedmosaic.errors import ConfigError

EXAMPLES = ("asia", "vertical", "images", "views")
"""The example folders."""


def copy_examples(dest: Path) -> list[Path]:
    """Copy every example folder into ``dest`` (created) and return the folders written.

    Raises
    ------
    ConfigError
        If ``dest`` already holds one of them.
    """
    taken = [dest / name for name in EXAMPLES if (dest / name).exists()]
    if taken:
        raise ConfigError("DEST", f"{taken[0]} exists already; choose another folder")
    written = []
    root = resources.files(__name__)
    for name in EXAMPLES:
        with resources.as_file(root / name) as source:
            shutil.copytree(source, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
        written.append(dest / name)
    return written
