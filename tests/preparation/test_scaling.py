"""Federated feature scaling: the sites' counts, sums and sums of squares give the pooled statistics."""

import numpy as np
import pytest

from fedmosaic.errors import FedmosaicError
from fedmosaic.federation import ClientContext, ClientState, Federation, InProcessGrid, Message, Schedule
from fedmosaic.preparation.scaling import MIN_SITE_ROWS, ScalingClient, ScalingServer, combine, moments


def _sites() -> list[np.ndarray]:
    rng = np.random.default_rng(3)
    return [rng.normal(loc, 2.0, size=(n, 3)).astype(np.float32) for loc, n in ((0.0, 40), (5.0, 12), (-1.0, 90))]


def test_combined_moments_are_the_pooled_mean_and_std() -> None:
    # Prepare
    sites = _sites()
    pooled = np.concatenate(sites).astype(np.float64)
    # Execute
    scaling = combine([moments(x) for x in sites])
    # Assert
    assert np.allclose(scaling.mean, pooled.mean(axis=0))
    assert np.allclose(scaling.std, pooled.std(axis=0))


def test_a_site_sends_its_count_sums_and_sums_of_squares_only() -> None:
    # Execute
    reply = ScalingClient(_sites()[1]).handle(Message(kind="query.moments"), ClientState(), ClientContext(1, 1, 0))
    # Assert
    assert {name: a.shape for name, a in reply.arrays.items()} == {"count": (1,), "sum": (3,), "sum_sq": (3,)}
    assert reply.metrics == {"num_examples": 12.0}


def test_a_site_with_too_few_rows_sends_nothing() -> None:
    # With two rows, a feature's sum and sum of squares give both values
    site = ScalingClient(np.ones((MIN_SITE_ROWS - 1, 3), np.float32))
    with pytest.raises(FedmosaicError, match=f"at least {MIN_SITE_ROWS} rows"):
        site.handle(Message(kind="query.moments"), ClientState(), ClientContext(1, 1, 0))


def test_one_round_over_a_grid_scales_every_site_by_the_pooled_statistics() -> None:
    # Prepare
    sites = _sites()
    server = ScalingServer(shape=(3,))
    # Execute
    with InProcessGrid(lambda k: ScalingClient(sites[k]), seed=0) as grid:
        Federation(server, grid, Schedule(num_clients=3, min_replies=3), seed=0, rounds=1).run()
    # Assert
    assert server.scaling is not None
    scaled = np.concatenate([server.scaling.apply(x) for x in sites])
    assert np.allclose(scaled.mean(axis=0), 0, atol=1e-5)
    assert np.allclose(scaled.std(axis=0), 1, atol=1e-5)
