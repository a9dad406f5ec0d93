"""Measure what the reference code's noise share amounts to on a unit-scale latent, per network.

The reference mixes ``x = (1 - s) z + s N(0, 1)`` into its autoencoder's raw
latent ``z``; a latent of standard deviation ``std`` gives the same
signal-to-noise ratio as fedmosaic's unit-scale mix with the share
``s / (s + (1 - s) std)``. This script builds the reference inputs
(``data.inputs = "reference"``, seed 0, each network's default samples and
latent width, the autoencoder's default epoch bound) without and with the task
encoded, and writes the raw latent's standard deviation of each to
``docs/results/fcm-noise-equivalence.json``; ``scripts/fcm_tables.py`` prints
the equivalence from it. Beside it, for the default inputs of the main table
(``data.inputs = "concepts"``, noise share 0.7), the test accuracy of a linear
probe from ``x`` to the task: what the inputs let any model reach.

Usage::

    python scripts/fcm_noise_equivalence.py
"""

from __future__ import annotations

import json
from pathlib import Path

from fedmosaic.data.bayesnet import NETWORK_TASKS, REFERENCE_NOISE_SHARE, sample_concept_splits
from fedmosaic.data.concept_inputs import REFERENCE_MAX_EPOCHS

OUT = Path(__file__).resolve().parent.parent / "docs" / "results" / "fcm-noise-equivalence.json"
SEED = 0


def main() -> None:
    """Write the raw latent's scale of every network, without and with the task encoded, and the default probe."""
    scales = {
        network: {
            inputs: sample_concept_splits(
                network, seed=SEED, mode="reference", leak_task=leak, noise_share=REFERENCE_NOISE_SHARE
            ).latent_std
            for inputs, leak in (("concepts", False), ("concepts and task", True))
        }
        for network in NETWORK_TASKS
    }
    probes = {network: sample_concept_splits(network, seed=SEED).probe_accuracy for network in NETWORK_TASKS}
    document = {"seed": SEED, "epochs": REFERENCE_MAX_EPOCHS, "latent_std": scales, "default_probe_accuracy": probes}
    OUT.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
