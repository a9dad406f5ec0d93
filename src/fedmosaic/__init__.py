"""fedmosaic: federated learning when every participant holds a different piece of the data."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from fedmosaic.version import __version__

if TYPE_CHECKING:
    from fedmosaic.api import Results, run
    from fedmosaic.models.loaded import LoadedModel

__all__ = ["Results", "__version__", "load_model", "run"]


def load_model(path: str | Path, *, trust_code: bool = False, allow_changed_code: bool = False) -> LoadedModel:
    """Load a model a fedmosaic run wrote (:func:`fedmosaic.models.loader.load_model`).

    ``model = fedmosaic.load_model("runs/demo")`` loads the run's only model
    (or name one folder under ``runs/demo/model/``); then
    ``model.predict(x).probabilities`` and, for F-CMs,
    ``model.intervene(x, {"smoke": "yes"})``.
    A model built by your own factory is loaded only with ``trust_code=True``
    (:func:`fedmosaic.models.loader.load_model`).
    """
    from fedmosaic.models.loader import load_model as load

    return load(path, trust_code=trust_code, allow_changed_code=allow_changed_code)


def __getattr__(name: str) -> Any:
    """``fedmosaic.run`` and ``fedmosaic.Results`` (:mod:`fedmosaic.api`), imported when first used."""
    if name in ("run", "Results"):
        from fedmosaic import api

        return getattr(api, name)
    raise AttributeError(f"module 'fedmosaic' has no attribute {name!r}")
