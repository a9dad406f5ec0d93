"""Writing a model folder (weights as safetensors, the card last) and reading its parts back."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from safetensors import SafetensorError
from safetensors.numpy import load

from fedmosaic.atomic import atomic_write_bytes, write_json
from fedmosaic.models.card import CARD_FILE, ModelFileError
from fedmosaic.models.parts import PART_CARD_SUFFIX, write_arrays

EXAMPLES = "examples.csv"
"""A few test rows written beside the weights, with the card's column names: inputs to try the model on."""


def write_model(
    folder: Path, card: dict[str, Any], parts: Mapping[str, Mapping[str, np.ndarray]], examples: np.ndarray
) -> None:
    """Write each part's arrays to ``<part>.safetensors``, ``examples.csv``, then ``card.json`` (last: a folder with a card is complete).

    Parameters
    ----------
    folder : Path
        Created if needed; files of an earlier model there are replaced.
    card : dict
        The model card; its ``parts`` names every part with its ``file``.
    parts : mapping of str to mapping of str to numpy.ndarray
        The parts at hand, by name; a part of the card that is missing here
        (held by a party that writes its own, :mod:`fedmosaic.models.parts`)
        is listed but not written.
    examples : numpy.ndarray
        A few input rows, flat, in the order of the card's ``inputs.columns``.
    """
    for name, arrays in parts.items():
        write_arrays(folder / card["parts"][name]["file"], name, arrays)
    table = pd.DataFrame(examples, columns=card["inputs"]["columns"]).to_csv(index=False).encode()
    atomic_write_bytes(folder / EXAMPLES, table)
    write_json(folder / CARD_FILE, card)


def read_part(folder: Path, card: dict[str, Any], name: str) -> tuple[dict[str, np.ndarray], Path]:
    """The arrays of part ``name`` of the model in ``folder``, and the file they were read from.

    Raises
    ------
    ModelFileError
        If the card has no such part, names a file outside ``folder``, or the
        file is missing, unreadable, not the file the card's SHA-256 names (a
        part of another run) or holds a value that is not finite.
    """
    entry = card["parts"].get(name)
    if not isinstance(entry, dict) or "file" not in entry:
        raise ModelFileError(f"{folder / CARD_FILE}: parts.{name}: missing from the card")
    path = folder / str(entry["file"])
    if path.resolve().parent != folder.resolve():
        raise ModelFileError(
            f"{folder / CARD_FILE}: parts.{name}.file: must name a file of the model folder, got {entry['file']!r}"
        )
    if not path.is_file():
        holder = entry.get("holder", "its holder")
        raise ModelFileError(
            f"{path}: part {name!r} is not here; {holder} keeps it: copy its {path.name} and {name}{PART_CARD_SUFFIX} into {folder}"
        )
    try:
        payload = path.read_bytes()
        arrays = load(payload)
    except (SafetensorError, OSError, ValueError) as error:
        raise ModelFileError(f"{path}: not a readable safetensors file ({error})") from None
    if "sha256" in entry and hashlib.sha256(payload).hexdigest() != entry["sha256"]:
        raise ModelFileError(
            f"{path}: not the part {name!r} this model was trained with (its SHA-256 differs from the card's): copy the file its party wrote for this run"
        )
    for key, array in arrays.items():
        if array.dtype.kind == "f" and not np.isfinite(array).all():
            raise ModelFileError(f"{path}: tensor {key!r} holds values that are not finite (NaN or infinity)")
    return arrays, path
