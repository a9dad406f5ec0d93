"""The scalings a model card may record (``inputs.scaling``): every description fedmosaic writes, and none other.

A card's ``inputs.scaling`` tells how the inputs were scaled in training, and
so how new inputs must be scaled. A card read back is refused unless its
scaling is one of :data:`SCALINGS`: a description edited into another says
nothing a reader can act on.
"""

from __future__ import annotations

DATASET_SCALING: dict[str, str] = {
    "digits": "pixel intensities 0..16 divided by 16 (in [0, 1])",
    "mnist": "pixel intensities 0..255 divided by 255 (in [0, 1])",
    "fashion-mnist": "pixel intensities 0..255 divided by 255 (in [0, 1])",
    "simpson-mnist": "RGB-tinted MNIST pixels in [0, 1] (see docs/methods/fedcfa.md)",
    "isolet": "the published ISOLET features, already in [-1, 1]",
    "bnlearn": "autoencoded one-hot concepts plus noise, standardised with the training split's mean and standard deviation",
}
"""How each built-in dataset's features were scaled in training."""
LOADER_SCALING = "as the dataset loader returns them"
"""A plugin's dataset: its loader's arrays as they are."""
TABLE_SCALING = "raw values of the schema's feature columns; the model standardises them with the federated mean and standard deviation"
"""Sites' own tables (horizontal and concept tasks)."""
VERTICAL_PARTS = "raw values of each party's columns; the model standardises them with that party's mean and standard deviation, the active party's in this card (inputs.party_standardise), each passive party's in its part card (<part>.json), which comes with its part"
"""A vertical table model on a deployment, where the passive parties' statistics stay with their parts."""
VERTICAL_RAW = "raw values of each party's columns; the model standardises them with that party's mean and standard deviation (the active party's over all its rows, a passive party's over the rows it served)"
"""A vertical table model whose every party's statistics are at hand (in process)."""

SCALINGS = frozenset({*DATASET_SCALING.values(), LOADER_SCALING, TABLE_SCALING, VERTICAL_PARTS, VERTICAL_RAW})
"""Every scaling a card may record."""
DTYPES = ("float32",)
"""The input dtypes a card may record (``inputs.dtype``)."""
