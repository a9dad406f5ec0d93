"""A part its party wrote: the standardisation of every party joined once the parts are gathered."""

from pathlib import Path
from typing import Any

import numpy as np

from fedmosaic.models.parts import with_party_scales, write_part


def _deployed_card() -> dict[str, Any]:
    """A deployed vertical card: the active party's statistics at hand, the two passive parties' not."""
    return {
        "parts": {f"party-{k}": {"file": f"party-{k}.safetensors"} for k in range(3)},
        "inputs": {
            "parties": [["a"], ["b", "c"], ["d"]],
            "party_standardise": [{"mean": [1.0], "std": [2.0]}, None, None],
        },
    }


def test_the_parties_standardisations_are_joined_in_party_order_once_every_part_card_is_here(tmp_path: Path) -> None:
    # Prepare: the parts' cards gathered in the model folder
    weights = {"w": np.zeros(1, np.float32)}
    write_part(tmp_path, "party-2", weights, {"standardise": {"mean": [5.0], "std": [6.0]}})
    write_part(tmp_path, "party-1", weights, {"standardise": {"mean": [3.0, 4.0], "std": [7.0, 8.0]}})
    # Execute
    card = with_party_scales(tmp_path, _deployed_card())
    # Assert
    assert card["inputs"]["standardise"] == {"mean": [1.0, 3.0, 4.0, 5.0], "std": [2.0, 7.0, 8.0, 6.0]}


def test_a_card_stays_as_it_is_while_a_partys_part_card_is_missing(tmp_path: Path) -> None:
    # Prepare: only the lab's part gathered
    write_part(
        tmp_path, "party-1", {"w": np.zeros(1, np.float32)}, {"standardise": {"mean": [3.0, 4.0], "std": [1.0, 1.0]}}
    )
    card = _deployed_card()
    # Execute / Assert
    assert with_party_scales(tmp_path, card) == card
