"""Writing a model folder (weights as safetensors, the card last) and reading its parts back."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from safetensors import SafetensorError
from safetensors.numpy import load_file, save

from fedmosaic.atomic import atomic_write_bytes, write_json
from fedmosaic.models.card import CARD_FILE, ModelFileError

SUFFIX = ".safetensors"
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
        (held by a party that writes its own) is listed but not written.
    examples : numpy.ndarray
        A few input rows, flat, in the order of the card's ``inputs.columns``.
    """
    for name, arrays in parts.items():
        payload = save({key: np.ascontiguousarray(value) for key, value in arrays.items()}, metadata={"part": name})
        atomic_write_bytes(folder / card["parts"][name]["file"], payload)
    table = pd.DataFrame(examples, columns=card["inputs"]["columns"]).to_csv(index=False).encode()
    atomic_write_bytes(folder / EXAMPLES, table)
    write_json(folder / CARD_FILE, card)


def read_part(folder: Path, card: dict[str, Any], name: str) -> dict[str, np.ndarray]:
    """The arrays of part ``name`` of the model in ``folder``.

    Raises
    ------
    ModelFileError
        If the card has no such part, or its file is missing or unreadable.
    """
    entry = card["parts"].get(name)
    if not isinstance(entry, dict) or "file" not in entry:
        raise ModelFileError(f"{folder / CARD_FILE}: parts.{name}: missing from the card")
    path = folder / str(entry["file"])
    if not path.is_file():
        holder = entry.get("holder", "its holder")
        raise ModelFileError(f"{path}: part {name!r} is not here; {holder} keeps it: copy its file into {folder}")
    try:
        return load_file(path)
    except (SafetensorError, OSError, ValueError) as error:
        raise ModelFileError(f"{path}: not a readable safetensors file ({error})") from None
