"""Factor decorrelation against a direct Pearson computation."""

import numpy as np
import pytest
import torch

from fedmosaic.methods.horizontal.fedcfa.decorrelation import VARIANCE_EPS, factor_decorrelation


def _mean_abs_pearson(factors: np.ndarray, floor: float = VARIANCE_EPS) -> float:
    """Pearson correlations with each variance (over the batch) raised by ``floor``."""
    covariance = np.cov(factors, rowvar=False, bias=True)
    std = np.sqrt(np.diag(covariance) + floor)
    corr = covariance / np.outer(std, std)
    upper = np.triu_indices(factors.shape[1], k=1)
    return float(np.abs(corr[upper]).mean())


def test_fdc_equals_the_mean_absolute_pearson_correlation_over_pairs() -> None:
    # Prepare: correlated factors
    rng = np.random.default_rng(0)
    base = rng.standard_normal((32, 3))
    factors = np.concatenate([base, base @ rng.standard_normal((3, 4))], axis=1)
    # Execute
    value = factor_decorrelation(torch.from_numpy(factors))
    # Assert
    assert float(value) == pytest.approx(_mean_abs_pearson(factors), rel=1e-6)


def test_fdc_of_feature_maps_uses_spatially_averaged_channels() -> None:
    # Prepare
    maps = np.random.default_rng(1).standard_normal((16, 5, 3, 3))
    # Execute
    value = factor_decorrelation(torch.from_numpy(maps))
    # Assert
    assert float(value) == pytest.approx(_mean_abs_pearson(maps.mean(axis=(2, 3))), rel=1e-6)


def test_fdc_is_zero_for_independent_columns_and_one_for_copies() -> None:
    # Prepare
    a = torch.tensor([1.0, -1.0, 1.0, -1.0])
    b = torch.tensor([1.0, 1.0, -1.0, -1.0])
    # Execute / Assert
    assert float(factor_decorrelation(torch.stack([a, b], dim=1))) == pytest.approx(0.0)
    assert float(factor_decorrelation(torch.stack([a, -3 * a], dim=1))) == pytest.approx(1.0, abs=1e-4)
    assert float(factor_decorrelation(a[:, None])) == 0.0


def test_a_constant_factor_counts_as_uncorrelated_and_keeps_gradients_finite() -> None:
    # Prepare: a dead unit next to two perfectly correlated ones
    a = torch.tensor([0.0, 1.0, 2.0, 3.0])
    z = torch.stack([a, 2 * a, torch.zeros(4)], dim=1).requires_grad_(True)
    # Execute
    value = factor_decorrelation(z)
    value.backward()
    # Assert: pairs (a, 2a) = 1, (a, 0) = (2a, 0) = 0
    assert float(value.detach()) == pytest.approx(1.0 / 3.0, rel=1e-4)
    assert z.grad is not None
    assert torch.isfinite(z.grad).all()


def test_the_variance_floor_bounds_the_gradient_of_a_nearly_dead_unit() -> None:
    # Prepare: a unit varying with standard deviation 1e-4, correlated with a live one
    rng = np.random.default_rng(0)
    live = rng.standard_normal(64)
    z = torch.tensor(np.stack([live, 1e-4 * (live + rng.standard_normal(64))], axis=1), requires_grad=True)
    # Execute
    factor_decorrelation(z).backward()
    # Assert: the largest gradient is about 4 with the floor 1e-4; the former floor 1e-8 gave about 176
    assert VARIANCE_EPS == 1e-4
    assert float(z.grad.abs().max()) < 10.0
