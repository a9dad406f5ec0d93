"""fedmosaic: federated learning when every participant holds a different piece of the data."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from fedmosaic.version import __version__

if TYPE_CHECKING:
    from fedmosaic.models.loaded import LoadedModel

__all__ = ["__version__", "load_model"]


def load_model(path: str | Path) -> LoadedModel:
    """Load a model a fedmosaic run wrote (:func:`fedmosaic.models.loader.load_model`).

    ``model = fedmosaic.load_model("runs/demo")`` loads the run's only model
    (or name one folder under ``runs/demo/model/``); then
    ``model.predict(x).probabilities`` and, for F-CMs,
    ``model.intervene(x, {"smoke": "yes"})``.
    """
    from fedmosaic.models.loader import load_model as load

    return load(path)
