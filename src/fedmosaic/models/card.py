"""The model card: ``card.json`` beside the weights, what it must hold, and which versions can read it.

A model folder holds ``card.json`` and one ``<part>.safetensors`` file per part
of the model. The card is plain JSON; its fields are described in
``docs/models.md``. It is read back with :func:`read_card`, which refuses a
folder without a card, a card that is not JSON or lacks a field, and a card
written by a newer fedmosaic or in a newer card format.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from fedmosaic.errors import FedmosaicError
from fedmosaic.models.scalings import DTYPES, SCALINGS
from fedmosaic.version import __version__

CARD_FILE = "card.json"
CARD_FORMAT = 1
"""Version of the card's layout; a reader refuses a higher one."""
REQUIRED = ("format", "fedmosaic_version", "kind", "method", "architecture", "parts", "inputs", "classes")
"""Fields every card holds."""


class ModelFileError(FedmosaicError):
    """A model folder, its card or an input given to a loaded model is unusable (one line, exit 2)."""


def version_tuple(version: str) -> tuple[int, ...]:
    """The numeric release of a version string (``"0.1.0"`` -> ``(0, 1, 0)``; suffixes ignored).

    Examples
    --------
    >>> version_tuple("0.10.2rc1") > version_tuple("0.9.9")
    True
    """
    return tuple(int(part) for part in re.findall(r"\d+", version.split("+")[0].split("rc")[0])[:3])


def read_card(folder: Path) -> dict[str, Any]:
    """The card of the model in ``folder``, checked.

    Raises
    ------
    ModelFileError
        If ``folder`` holds no card, the card is not a JSON object with every
        field of :data:`REQUIRED`, or it comes from a newer fedmosaic or card
        format than this one reads.
    """
    path = folder / CARD_FILE
    if not path.is_file():
        raise ModelFileError(
            f"{folder}: no model here (expected {CARD_FILE}; a run writes its models under <run>/model/)"
        )
    card = read_json_object(path, "model card")
    missing = [name for name in REQUIRED if name not in card]
    if missing:
        raise ModelFileError(f"{path}: model card lacks {', '.join(missing)}")
    written = str(card["fedmosaic_version"])
    if not re.fullmatch(r"\d+(\.\d+){0,3}[0-9A-Za-z.+-]*", written):
        raise ModelFileError(f"{path}: fedmosaic_version {written!r} is not a version (such as {__version__!r})")
    if version_tuple(written) > version_tuple(__version__):
        raise ModelFileError(
            f"{path}: written by fedmosaic {written}, newer than this {__version__}; upgrade fedmosaic to load it"
        )
    if not isinstance(card["format"], int) or card["format"] > CARD_FORMAT:
        raise ModelFileError(
            f"{path}: card format {card['format']!r} is not one this fedmosaic reads (<= {CARD_FORMAT})"
        )
    for name in ("architecture", "inputs", "parts"):
        if not isinstance(card[name], dict):
            raise ModelFileError(f"{path}: {name}: expected a JSON object, got {type(card[name]).__name__}")
    _check_inputs(card["inputs"], path)
    try:
        _check_agreement(card)
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise ModelFileError(f"{path}: the card's fields disagree: {error}") from None
    return card


def read_json_object(path: Path, what: str) -> dict[str, Any]:
    """The JSON object in ``path``, a ``what`` (``"model card"``).

    Raises
    ------
    ModelFileError
        If the file cannot be read, is not JSON, or holds no JSON object.
    """
    try:
        document = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ModelFileError(f"{path}: not a readable {what} ({error})") from None
    if not isinstance(document, dict):
        raise ModelFileError(f"{path}: a {what} must be a JSON object")
    return document


def _check_inputs(inputs: dict[str, Any], path: Path) -> None:
    """Refuse an ``inputs`` section whose dtype or scaling is none fedmosaic writes (:mod:`~fedmosaic.models.scalings`).

    Examples
    --------
    >>> loader = "as the dataset loader returns them"
    >>> _check_inputs({"dtype": "float32", "scaling": loader}, Path("card.json"))
    >>> _check_inputs({"dtype": "garbage", "scaling": loader}, Path("card.json"))
    Traceback (most recent call last):
    ...
    fedmosaic.models.card.ModelFileError: card.json: inputs.dtype: expected one of float32, got 'garbage'
    """
    if inputs.get("dtype") not in DTYPES:
        raise ModelFileError(f"{path}: inputs.dtype: expected one of {', '.join(DTYPES)}, got {inputs.get('dtype')!r}")
    scaling = inputs.get("scaling")
    if scaling not in SCALINGS:
        shown = repr(scaling) if not isinstance(scaling, str) or len(scaling) <= 60 else repr(scaling[:60] + "...")
        raise ModelFileError(
            f"{path}: inputs.scaling: {shown} is none of the scalings fedmosaic records (docs/models.md lists them);"
            " a model's inputs must be scaled as in training"
        )


def _check_agreement(card: dict[str, Any]) -> None:
    """Refuse a card whose input width, classes and concepts disagree with its architecture.

    Examples
    --------
    >>> card = {"architecture": {"input_shape": [2, 2], "num_classes": 2}, "classes": ["a", "b"],
    ...         "inputs": {"columns": ["w", "x", "y", "z"], "shape": [2, 2]}}
    >>> _check_agreement(card)
    >>> _check_agreement({**card, "classes": ["a", "b", "c"]})
    Traceback (most recent call last):
    ...
    ValueError: classes lists 3 names, the architecture 2 classes
    """
    architecture, inputs = card["architecture"], card["inputs"]
    columns = len(inputs["columns"])
    if "shape" in inputs and math.prod(int(n) for n in inputs["shape"]) != columns:
        raise ValueError(f"inputs.columns lists {columns} names, inputs.shape {inputs['shape']} holds other values")
    width = (
        int(architecture["input_dim"])
        if "input_dim" in architecture
        else math.prod(int(n) for n in architecture["input_shape"])
        if "input_shape" in architecture
        else sum(int(n) for n in architecture["widths"])
        if "widths" in architecture
        else columns
    )
    if width != columns:
        raise ValueError(f"inputs.columns lists {columns} names, the architecture reads {width} inputs")
    graph = architecture.get("graph")
    if graph is None:
        classes = int(architecture["num_classes"])
    else:
        cardinalities = {str(k): int(v) for k, v in graph["cardinalities"].items()}
        if graph["task"] not in cardinalities:
            raise ValueError(f"architecture.graph.task {graph['task']!r} is not a node of the graph")
        classes = cardinalities.pop(graph["task"])
        _check_concepts(card.get("concepts", {}), cardinalities)
    if len(card["classes"]) != classes:
        raise ValueError(f"classes lists {len(card['classes'])} names, the architecture {classes} classes")


def _check_concepts(concepts: dict[str, Any], cardinalities: dict[str, int]) -> None:
    """Refuse a concept model's card whose ``concepts`` do not list each concept's categories.

    Examples
    --------
    >>> _check_concepts({"rain": ["no", "yes"]}, {"rain": 2, "wet": 2})
    Traceback (most recent call last):
    ...
    ValueError: concepts lacks the categories of ['wet'], a concept of the architecture's graph
    """
    unknown = sorted(set(concepts) - set(cardinalities))
    if unknown:
        raise ValueError(f"concepts names {unknown}, not concepts of the architecture's graph")
    missing = sorted(set(cardinalities) - set(concepts))
    if missing:
        raise ValueError(f"concepts lacks the categories of {missing}, a concept of the architecture's graph")
    for concept, categories in concepts.items():
        if len(categories) != cardinalities[concept]:
            raise ValueError(
                f"concepts.{concept} lists {len(categories)} categories, the architecture {cardinalities[concept]}"
            )
