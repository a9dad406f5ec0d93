"""Classifiers and FALSE-VFL models loaded from their folders give the run's logits and test metrics."""

import numpy as np
import torch

import fedmosaic
from fedmosaic.data import vertical_data
from fedmosaic.methods.arrays import load_arrays


def accuracy(probabilities: np.ndarray, truth: np.ndarray) -> float:
    """Share of rows whose most probable class is the truth, as the runs compute it (a count over the rows)."""
    return int((probabilities.argmax(1) == truth).sum()) / len(truth)


def test_fedavg_fedcfa_and_fedmix_models_give_the_global_models_logits_and_accuracy(digits_run) -> None:
    # Prepare
    run = digits_run
    test = run.workload.test
    for index, server in enumerate(run.servers):
        reference = server.exported_model().architecture
        network = server._model_factory()
        load_arrays(network, server.params)
        with torch.no_grad():
            expected = network(torch.from_numpy(test.x)).numpy()
        # Execute
        model = fedmosaic.load_model(sorted((run.out / "model").iterdir())[index])
        prediction = model.predict(test.x)
        # Assert
        assert model.card["architecture"] == reference
        assert model.card["method"] == ["fedavg", "fedcfa", "fedmix"][index]
        np.testing.assert_array_equal(prediction.logits, expected)
        assert accuracy(prediction.probabilities, test.y) == run.results["runs"][index]["final"]["accuracy"]
        assert model.predict(test.x.reshape(len(test.x), -1)).logits.tobytes() == prediction.logits.tobytes()


def test_false_vfl_model_joins_every_partys_part_and_reproduces_each_test_setting(vfl_run) -> None:
    # Prepare
    run = vfl_run
    final = run.results["runs"][0]["final"]
    # Execute
    model = fedmosaic.load_model(run.out)
    # Assert
    assert sorted(model.card["parts"]) == ["party-0", "party-1"]
    assert sorted(p.name for p in model.folder.glob("*.safetensors")) == ["party-0.safetensors", "party-1.safetensors"]
    tests = run.workload.data.tests
    for (name, split), expected in zip(tests.items(), run.vfl_predictions[-len(tests) :], strict=True):
        rows = np.concatenate(split.blocks, axis=1)
        prediction = model.predict(rows, seed=model.settings[name])
        np.testing.assert_array_equal(prediction.probabilities, expected)
        assert float((prediction.probabilities.argmax(-1) == split.y).mean()) == final[vertical_data.test_metric(name)]
    assert final[vertical_data.test_metric("MCAR 3")] > 0
    assert final[vertical_data.test_metric("MCAR 3")] == final["accuracy"]
