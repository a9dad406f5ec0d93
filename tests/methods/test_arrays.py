"""Named arrays <-> PyTorch tensors."""

import numpy as np
import pytest
from torch import nn

from fedmosaic.methods.arrays import load_arrays, model_to_arrays, seeded


def test_round_trip_preserves_every_tensor_by_name() -> None:
    # Prepare
    source = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    target = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    arrays = model_to_arrays(source)
    # Execute
    load_arrays(target, arrays)
    # Assert
    assert set(arrays) == set(target.state_dict())
    for name, value in model_to_arrays(target).items():
        np.testing.assert_array_equal(value, arrays[name])


def test_exported_arrays_are_copies_not_views_of_the_model() -> None:
    model = nn.Linear(2, 2)
    arrays = model_to_arrays(model)
    nn.init.zeros_(model.weight)
    assert np.abs(arrays["weight"]).sum() > 0


def test_loading_accepts_read_only_arrays_and_keeps_tensor_identity() -> None:
    model = nn.Linear(2, 2)
    weight = model.weight
    arrays = {k: v.copy() for k, v in model_to_arrays(nn.Linear(2, 2)).items()}
    for array in arrays.values():
        array.flags.writeable = False
    load_arrays(model, arrays)
    assert model.weight is weight
    np.testing.assert_array_equal(model.weight.detach().numpy(), arrays["weight"])


def test_strict_loading_rejects_missing_or_unexpected_names() -> None:
    model = nn.Linear(2, 2)
    arrays = model_to_arrays(model)
    with pytest.raises(KeyError, match="missing"):
        load_arrays(model, {"weight": arrays["weight"]})
    load_arrays(model, {"weight": arrays["weight"]}, strict=False)
    with pytest.raises(ValueError, match="shape"):
        load_arrays(model, {**arrays, "weight": np.zeros((3, 3), np.float32)})


def test_seeded_builds_are_reproducible_and_leave_the_global_generator_alone() -> None:
    import torch

    torch.manual_seed(0)
    expected_next = torch.rand(1)
    torch.manual_seed(0)
    a = seeded(7, lambda: nn.Linear(4, 4))
    after = torch.rand(1)
    b = seeded(7, lambda: nn.Linear(4, 4))
    assert torch.equal(a.weight, b.weight)
    assert torch.equal(after, expected_next)
