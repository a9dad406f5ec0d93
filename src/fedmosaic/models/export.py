"""What a method hands over for its model file: architecture, weights by part, and details for the card.

Methods build a :class:`ModelExport` in ``ServerLogic.exported_model`` (the
model the run tests) and, for parties that keep their own part of the model,
``ClientLogic.exported_part``. This module imports nothing else of
fedmosaic, so the federation layer can name it without depending on methods.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True, eq=False)
class ModelExport:
    """A trained model as named arrays and a JSON description the loader rebuilds it from.

    Parameters
    ----------
    kind : {"classifier", "concepts", "false-vfl"}
        Which loaded-model class rebuilds it.
    architecture : dict
        JSON-ready: everything the architecture is rebuilt from (no data, no
        experiment configuration).
    arrays : dict of str to numpy.ndarray
        The weights the server holds, by parameter name.
    part : str, default "model"
        Name of the server's part (its file is ``<part>.safetensors``).
    client_parts : tuple of str, default ()
        Names of the parts the clients hold, by client id (vertical methods:
        each passive party's networks belong to that party).
    details : dict, default empty
        JSON-ready facts for the model card (the fused graph's consensus,
        the selected round, sampling seeds).
    """

    kind: str
    architecture: dict[str, Any]
    arrays: dict[str, np.ndarray]
    part: str = "model"
    client_parts: tuple[str, ...] = ()
    details: dict[str, Any] = field(default_factory=dict)
