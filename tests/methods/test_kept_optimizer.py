"""An optimizer's state kept by parameter name between calls of the training loop."""

from __future__ import annotations

import numpy as np
import torch

from fedmosaic.methods.kept_optimizer import PREFIX, keep_optimizer, restore_optimizer
from fedmosaic.methods.train_params import TrainParams
from fedmosaic.methods.training import train_epochs


def _data() -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    return torch.randn(24, 3, generator=generator), torch.randint(0, 2, (24,), generator=generator)


def _model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))


def test_two_rounds_with_a_kept_state_train_like_one_optimizer_over_both() -> None:
    # Prepare: the same model and shuffling, trained as one call of 2 epochs or two calls of 1 keeping the state
    x, y = _data()
    continuous, split = _model(), _model()
    params = TrainParams(epochs=2, batch_size=8, optimizer="adam", lr=0.05)
    kept: dict[str, np.ndarray] = {}

    # Execute
    train_epochs(continuous, x, y, params=params, generator=torch.Generator().manual_seed(1))
    order = torch.Generator().manual_seed(1)
    for _ in range(2):
        train_epochs(split, x, y, params=params.model_copy(update={"epochs": 1}), generator=order, kept=kept)

    # Assert
    for a, b in zip(continuous.parameters(), split.parameters(), strict=True):
        assert torch.equal(a, b)


def test_without_a_kept_state_each_call_starts_afresh() -> None:
    # Prepare
    x, y = _data()
    continuous, split = _model(), _model()
    params = TrainParams(epochs=2, batch_size=8, optimizer="adam", lr=0.05)

    # Execute
    train_epochs(continuous, x, y, params=params, generator=torch.Generator().manual_seed(1))
    order = torch.Generator().manual_seed(1)
    for _ in range(2):
        train_epochs(split, x, y, params=params.model_copy(update={"epochs": 1}), generator=order)

    # Assert
    assert not all(torch.equal(a, b) for a, b in zip(continuous.parameters(), split.parameters(), strict=True))


def test_a_parameter_whose_shape_changed_starts_afresh_and_one_that_disappeared_is_forgotten() -> None:
    # Prepare: state kept for a model whose second layer is then widened, and for a parameter it no longer has
    model = _model()
    optimizer = torch.optim.Adam(model.parameters())
    model(torch.ones(1, 3)).sum().backward()
    optimizer.step()
    kept = {f"{PREFIX}gone.weight/step": np.array(1.0, np.float32)}
    keep_optimizer(optimizer, model, kept)
    grown = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 3))
    fresh = torch.optim.Adam(grown.parameters())

    # Execute
    restore_optimizer(fresh, grown, kept)
    keep_optimizer(fresh, grown, kept)

    # Assert
    assert torch.equal(fresh.state[grown[0].weight]["exp_avg"], optimizer.state[model[0].weight]["exp_avg"])
    assert grown[2].weight not in fresh.state
    assert not any(key.startswith(f"{PREFIX}gone.") for key in kept)


def test_only_the_parameters_the_optimizer_trains_are_restored() -> None:
    # Prepare: state for every parameter, an optimizer over the first layer only
    model = _model()
    optimizer = torch.optim.Adam(model.parameters())
    model(torch.ones(1, 3)).sum().backward()
    optimizer.step()
    kept: dict[str, np.ndarray] = {}
    keep_optimizer(optimizer, model, kept)
    partial = torch.optim.Adam(model[0].parameters())

    # Execute
    restore_optimizer(partial, model, kept)

    # Assert
    assert set(partial.state) == {model[0].weight, model[0].bias}
    assert f"{PREFIX}2.weight/exp_avg" in kept
