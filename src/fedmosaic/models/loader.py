"""``load_model``: from a model folder (or a run folder holding one model) to a loaded model."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from fedmosaic.errors import ConfigError
from fedmosaic.models.card import CARD_FILE, ModelFileError, read_card
from fedmosaic.models.loaded import ClassifierModel, ConceptModelFile, LoadedModel
from fedmosaic.models.parts import with_party_scales
from fedmosaic.models.vertical import FalseVFLModel, SplitVFLModel
from fedmosaic.user_code import OWN_PARTS, source_sha256

MODEL_DIR = "model"
"""The folder of a run's output that holds its models."""

KINDS: dict[str, Callable[..., LoadedModel]] = {
    "classifier": ClassifierModel,
    "concepts": ConceptModelFile,
    "false-vfl": FalseVFLModel,
    "split-vfl": SplitVFLModel,
}
"""The loaded-model class of each card ``kind``."""


def load_model(path: str | Path, *, trust_code: bool = False, allow_changed_code: bool = False) -> LoadedModel:
    """Load the model in ``path``, with nothing but the model folder.

    Parameters
    ----------
    path : str or Path
        A model folder (it holds ``card.json``), or a folder holding exactly
        one, such as a run's output folder or its ``model/``. A vertical
        model's parties' parts are read from it: on a deployment each party
        writes its own (:mod:`fedmosaic.models.parts`), and they are copied here.
    trust_code : bool, default False
        Import the module a model built by a user's factory needs (its card
        names it, ``architecture.model.factory``). Without it such a model is
        refused: importing a module runs its code. The weights themselves are
        safetensors and never run code.
    allow_changed_code : bool, default False
        With ``trust_code``, load even if the module's source is no longer
        the one the card records (``architecture.model.code_sha256``).

    Returns
    -------
    LoadedModel
        With ``predict``, ``classes``, ``card`` and, for F-CMs, ``concepts``,
        ``graph`` and ``intervene``.

    Raises
    ------
    ModelFileError
        If ``path`` holds no model or several, or the model cannot be read.
    """
    folder = model_folder(Path(path))
    card = with_party_scales(folder, read_card(folder))
    check_code(folder, card, trust_code=trust_code, allow_changed_code=allow_changed_code)
    kind = card["kind"]
    if kind not in KINDS:
        raise ModelFileError(
            f"{folder / CARD_FILE}: kind {kind!r} is not one this fedmosaic loads ({', '.join(KINDS)})"
        )
    try:
        return KINDS[kind](folder, card)
    except (
        KeyError,
        TypeError,
        ValueError,
        AttributeError,
    ) as error:  # a card edited by hand (pydantic's errors are ValueErrors)
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise ModelFileError(
            f"{folder / CARD_FILE}: the card's architecture does not describe these weights ({reason})"
        ) from None


def check_code(folder: Path, card: dict[str, Any], *, trust_code: bool, allow_changed_code: bool) -> None:
    """Refuse a model built by a user's factory unless its code is trusted, and unchanged or allowed to be.

    Every part the card names a factory of is checked (``architecture.model``,
    and a vertical method's ``architecture.head``).

    Raises
    ------
    ModelFileError
        Naming the module that would be imported and the option that allows it.
    """
    architecture = card.get("architecture")
    for key in OWN_PARTS:
        part = architecture.get(key) if isinstance(architecture, dict) else None
        if isinstance(part, dict) and part.get("factory") is not None:
            _check_part_code(folder, key, part, trust_code=trust_code, allow_changed_code=allow_changed_code)


def _check_part_code(
    folder: Path, key: str, part: dict[str, Any], *, trust_code: bool, allow_changed_code: bool
) -> None:
    """:func:`check_code` of one part, ``architecture.<key>``."""
    factory = part["factory"]
    where = f"{folder / CARD_FILE}: {key}.factory"
    if not isinstance(factory, str):
        raise ModelFileError(f"{where} must be a string, got {type(factory).__name__}")
    module = factory.rpartition(":")[0]
    if not trust_code:
        raise ModelFileError(
            f"{where}: this model is built by code, loading it would import {module}; "
            "pass trust_code=True (--trust-code) if you trust that module"
        )
    try:
        found = source_sha256(factory, f"{key}.factory")
    except ConfigError as error:
        raise ModelFileError(f"{where}: {error.message}") from None
    recorded = part.get("code_sha256")
    if found != recorded and not allow_changed_code:
        raise ModelFileError(
            f"{where}: the source of {module} is not the one this model was trained with "
            f"(recorded {str(recorded)[:12]}..., now {found[:12]}...); "
            "pass allow_changed_code=True (--trust-changed-code) to load it anyway"
        )


def model_folder(path: Path) -> Path:
    """The model folder ``path`` designates: itself, or the only model folder below it.

    Raises
    ------
    ModelFileError
        If ``path`` does not exist or holds no model or several.
    """
    if not path.exists():
        raise ModelFileError(f"{path}: no such model folder")
    if (path / CARD_FILE).is_file() or not path.is_dir():
        return path
    root = path / MODEL_DIR if (path / MODEL_DIR).is_dir() else path
    found = sorted(card.parent for card in root.rglob(CARD_FILE))
    if len(found) == 1:
        return found[0]
    if not found:
        return path  # read_card names what is missing
    listed = ", ".join(str(folder) for folder in found[:5]) + (", ..." if len(found) > 5 else "")
    raise ModelFileError(f"{path}: holds {len(found)} models; pass one of them: {listed}")
