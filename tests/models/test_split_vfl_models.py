"""Split-network vertical models loaded from their folders give the run's probabilities and test accuracies.

The methods: Local, Vanilla VFL, PlugVFL, LASER-VFL, FedHSSL.
"""

import numpy as np
import pytest
import torch

import fedmosaic
from fedmosaic.data import vertical_data
from fedmosaic.methods.vertical.split import baselines

METHODS = ["vfl-local", "vanilla-vfl", "plug-vfl", "laser-vfl", "fedhssl"]


@pytest.mark.parametrize("index", range(len(METHODS)), ids=METHODS)
def test_split_model_joins_every_partys_encoder_and_reproduces_each_test_setting(split_run, index: int) -> None:
    # Prepare
    run = split_run
    final = run.results["runs"][index]["final"]
    tests = run.workload.data.tests
    expected = run.split_predictions[index][-len(tests) :]
    folder = sorted((run.out / "model").iterdir())[index]
    # Execute
    model = fedmosaic.load_model(folder)
    # Assert
    parts = ["party-0"] if METHODS[index] == "vfl-local" else ["party-0", "party-1", "party-2"]
    assert model.card["method"] == METHODS[index]
    assert sorted(model.card["parts"]) == parts
    assert sorted(p.stem for p in folder.glob("*.safetensors")) == parts
    for (name, split), probabilities in zip(tests.items(), expected, strict=True):
        rows = np.concatenate(split.blocks, axis=1)
        prediction = model.predict(rows)
        np.testing.assert_array_equal(prediction.probabilities, probabilities)
        assert (
            baselines.accuracy(model.votes(rows), torch.from_numpy(split.y)) == final[vertical_data.test_metric(name)]
        )
    assert not tests["MCAR 4"].present.all()
    assert 0 < final["accuracy"] == final[vertical_data.test_metric("MCAR 4")]
