"""Specification of FedHSSL's SimSiam pieces: losses, targets, augmentations, top layers and their average."""

import math

import numpy as np
import pytest
import torch

from fedmosaic.methods.arrays import seeded
from fedmosaic.methods.vertical.fedhssl.simsiam import (
    SimSiamParty,
    augment,
    average_top_layers,
    cross_party_loss,
    cross_party_targets,
    local_epoch,
    negative_cosine,
    top_layers,
)


def test_negative_cosine_is_minus_the_cosine_and_stops_the_target_gradient() -> None:
    # Prepare
    p = torch.tensor([[3.0, 4.0], [1.0, 0.0]], requires_grad=True)
    z = torch.tensor([[4.0, 3.0], [0.0, 2.0]], requires_grad=True)

    # Execute
    loss = negative_cosine(p, z)
    loss.backward()

    # Assert: cos = 24/25 and 0, averaged over the rows
    assert float(loss.detach()) == pytest.approx(-(24 / 25 + 0) / 2)
    assert z.grad is None
    assert p.grad is not None


def test_cross_party_loss_averages_every_prediction_against_every_other_projection() -> None:
    # Prepare: one row, two parties
    projections = torch.tensor([[[0.0, 1.0], [1.0, 1.0]]], requires_grad=True)
    predictions = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]], requires_grad=True)

    # Execute
    loss = cross_party_loss(projections, predictions)
    loss.backward()

    # Assert: (D(p_0, z_1) + D(p_1, z_0)) / 2 = (-1/sqrt(2) - 1) / 2
    assert float(loss.detach()) == pytest.approx((-1 / math.sqrt(2) - 1) / 2)
    assert projections.grad is None


def test_cross_party_loss_of_three_parties_matches_the_pairwise_sum() -> None:
    # Prepare
    generator = torch.Generator().manual_seed(0)
    z, p = torch.randn(5, 3, 4, generator=generator), torch.randn(5, 3, 4, generator=generator)

    # Execute
    loss = cross_party_loss(z, p)

    # Assert
    pairs = [negative_cosine(p[:, j], z[:, k]) for j in range(3) for k in range(3) if j != k]
    assert float(loss.detach()) == pytest.approx(float(sum(pairs)) / 6, abs=1e-6)


def test_a_partys_cross_party_target_is_the_mean_of_the_other_unit_projections() -> None:
    projections = torch.tensor([[[2.0, 0.0], [0.0, 5.0], [3.0, 4.0]]])

    targets = cross_party_targets(projections)

    torch.testing.assert_close(targets[0, 0], torch.tensor([(0 + 0.6) / 2, (1 + 0.8) / 2]))
    torch.testing.assert_close(targets[0, 2], torch.tensor([0.5, 0.5]))


def test_augmentations_add_noise_and_zero_about_mask_rate_of_the_features() -> None:
    x = torch.full((400, 50), 5.0)

    view = augment(x, 0.1, 0.3, torch.Generator().manual_seed(0))

    masked = view == 0
    assert 0.27 < float(masked.float().mean()) < 0.33
    assert 0.08 < float((view[~masked] - 5.0).std()) < 0.12


def test_top_layers_are_every_tensor_above_the_input_layer() -> None:
    model = SimSiamParty(5, 8, 4)

    names = set(top_layers(model))

    assert names == {k for k in model.state_dict() if not k.startswith("encoder.0.")}
    assert {"encoder.2.weight", "projector.0.weight", "projector.1.weight", "predictor.3.bias"} <= names


def test_the_average_of_top_layers_is_their_mean_and_leaves_the_input_layer_alone() -> None:
    # Prepare: three parties of different widths
    models = [SimSiamParty(width, 8, 4) for width in (5, 3, 7)]
    uploads = [top_layers(m) for m in models[1:]]
    own_input = models[0].encoder[0].weight.detach().clone()
    expected = {name: np.mean([top_layers(m)[name] for m in models], axis=0) for name in uploads[0]}

    # Execute
    average = average_top_layers(models[0], uploads)

    # Assert
    assert set(average) == set(expected)
    for name, value in expected.items():
        np.testing.assert_allclose(average[name], value, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(top_layers(models[0])[name], value, rtol=1e-5, atol=1e-7)
    torch.testing.assert_close(models[0].encoder[0].weight, own_input)


def test_a_local_epoch_lowers_the_pull_loss_toward_the_targets() -> None:
    # Prepare
    model = seeded(0, lambda: SimSiamParty(6, 16, 4))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    x = torch.randn(64, 6, generator=torch.Generator().manual_seed(1))
    targets = torch.randn(64, 4, generator=torch.Generator().manual_seed(2))
    pulled = torch.arange(64) < 32

    def pull_loss() -> float:
        with torch.no_grad():
            return float(negative_cosine(model.views(x[pulled])[1], targets[pulled]))

    before = pull_loss()

    # Execute
    for _ in range(20):
        local_epoch(
            model,
            optimizer,
            x,
            targets,
            pulled,
            batch_size=16,
            noise_std=0.1,
            mask_rate=0.2,
            pull=1.0,
            generator=torch.Generator().manual_seed(3),
        )

    # Assert
    assert pull_loss() < before - 0.3


def test_local_simsiam_keeps_the_projections_spread_instead_of_collapsing() -> None:
    # Prepare
    model = seeded(0, lambda: SimSiamParty(6, 16, 4))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    x = torch.randn(128, 6, generator=torch.Generator().manual_seed(1))
    nothing = torch.zeros(128, dtype=torch.bool)

    # Execute
    for epoch in range(30):
        local_epoch(
            model,
            optimizer,
            x,
            torch.zeros(128, 4),
            nothing,
            batch_size=32,
            noise_std=0.1,
            mask_rate=0.2,
            pull=0.0,
            generator=torch.Generator().manual_seed(epoch),
        )

    # Assert: unit projections of a constant would have no spread; uniform ones about 1/sqrt(4) per dimension
    with torch.no_grad():
        unit = torch.nn.functional.normalize(model.views(x)[0], dim=-1)
    assert float(unit.std(0).mean()) > 0.2
