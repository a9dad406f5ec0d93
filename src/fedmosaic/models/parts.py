"""A part of a model that its party writes itself: ``<part>.safetensors`` and its part card ``<part>.json``.

A vertical model's passive party keeps its own networks. After training,
each party writes its part where it runs (:mod:`fedmosaic.experiments.model_parts`):
the weights as ``<part>.safetensors``, as in any model folder, and beside
them ``<part>.json``, the part card: which part of which model it is, the
SHA-256 of the weights file (the coordinator's ``card.json`` records the
same digest), and the party's own standardisation of its raw columns. A
model folder whose parts were gathered from the parties (each party's two
files copied into it) loads as one written in process.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from safetensors.numpy import save

from fedmosaic.atomic import atomic_write_bytes, write_json
from fedmosaic.models.card import CARD_FORMAT, read_json_object

SUFFIX = ".safetensors"
PART_CARD_SUFFIX = ".json"
"""A part card's file is the part's name with this suffix."""


def write_arrays(path: Path, name: str, arrays: Mapping[str, np.ndarray]) -> str:
    """Write part ``name``'s arrays to ``path`` (safetensors, atomically) and return the file's SHA-256."""
    payload = save({key: np.ascontiguousarray(value) for key, value in arrays.items()}, metadata={"part": name})
    atomic_write_bytes(path, payload)
    return hashlib.sha256(payload).hexdigest()


def write_part(folder: Path, name: str, arrays: Mapping[str, np.ndarray], details: Mapping[str, Any]) -> str:
    """Write part ``name`` into ``folder``: its weights, then its part card (last: a part with a card is complete).

    Parameters
    ----------
    folder : Path
        Created if needed.
    name : str
        The part's name in the model's card (``party-1``).
    arrays : mapping of str to numpy.ndarray
        Its weights, by parameter name.
    details : mapping
        JSON-ready facts for the part card (the model it belongs to, the
        party's ``standardise``).

    Returns
    -------
    str
        The SHA-256 of the weights file.

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> digest = write_part(folder, "party-1", {"w": np.ones(2, np.float32)}, {"model": "model/00-x"})
    >>> sorted(p.name for p in folder.iterdir()), read_part_card(folder, "party-1")["sha256"] == digest
    (['party-1.json', 'party-1.safetensors'], True)
    """
    digest = write_arrays(folder / (name + SUFFIX), name, arrays)
    card = {"format": CARD_FORMAT, "part": name, "file": name + SUFFIX, "sha256": digest, **details}
    write_json(folder / (name + PART_CARD_SUFFIX), card)
    return digest


def read_part_card(folder: Path, name: str) -> dict[str, Any] | None:
    """The part card of part ``name`` in ``folder`` (None if there is none).

    Raises
    ------
    ModelFileError
        If the file is not a JSON object.
    """
    path = folder / (name + PART_CARD_SUFFIX)
    return read_json_object(path, "part card") if path.is_file() else None


def with_party_scales(folder: Path, card: dict[str, Any]) -> dict[str, Any]:
    """``card`` with ``inputs.standardise`` assembled from each party's own, where the card lacks it.

    A vertical model trained on a deployment: the coordinator's card holds
    the active party's standardisation (``inputs.party_standardise``, null
    for the parties whose statistics stayed with them) and each passive
    party's is in its part card. Once every party's is at hand, the model
    reads raw columns, as one written in process; otherwise the card is
    returned as it is.
    """
    inputs = card.get("inputs", {})
    known = inputs.get("party_standardise")
    if "standardise" in inputs or not isinstance(known, list):
        return card
    scales = []
    for k, scale in enumerate(known):
        part = read_part_card(folder, f"party-{k}") if scale is None else None
        scale = scale if part is None else part.get("standardise")
        if not isinstance(scale, dict):
            return card
        scales.append(scale)
    standardise = {key: [float(v) for scale in scales for v in scale[key]] for key in ("mean", "std")}
    return card | {"inputs": inputs | {"standardise": standardise}}
