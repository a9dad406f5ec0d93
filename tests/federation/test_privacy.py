"""Client-level differential privacy: the Gaussian mechanism on updates and Opacus's accounting."""

from __future__ import annotations

import numpy as np
import pytest
from opacus.accountants import RDPAccountant

from fedmosaic.federation import RoundContext, Schedule
from fedmosaic.federation.privacy import GaussianMechanism, PrivacyBudget, client_level_epsilon
from fedmosaic.federation.robust import ClippedUpdates, Mean

REFERENCE = {"a.w": np.zeros(3, np.float32), "a.b": np.zeros(1, np.float32), "b.w": np.zeros(2, np.float32)}


def _uploads(rng: np.random.Generator, holders: dict[str, int]) -> list[tuple[dict[str, np.ndarray], float]]:
    """Five clients with large random updates; ``holders[name]`` of them upload ``name``."""
    out = []
    for k in range(5):
        arrays = {n: (5 * rng.normal(size=a.shape)).astype(np.float32) for n, a in REFERENCE.items() if k < holders[n]}
        out.append((arrays, float(10 * (k + 1))))
    return out


def test_without_noise_it_is_the_plain_mean_of_the_clipped_updates() -> None:
    # Prepare: every client holds every name; then only some hold module b.
    rng = np.random.default_rng(0)
    for holders in ({"a.w": 5, "a.b": 5, "b.w": 5}, {"a.w": 5, "a.b": 5, "b.w": 2}):
        uploads = _uploads(rng, holders)
        mechanism = GaussianMechanism(clip_norm=2.0, noise_multiplier=0.0)

        # Execute
        private = mechanism.aggregate(uploads, REFERENCE, np.random.default_rng(1))
        plain = ClippedUpdates(Mean(), mechanism.module_bound(REFERENCE)).aggregate(
            [(arrays, 1.0) for arrays, _ in uploads], REFERENCE, None
        )

        # Assert
        assert sorted(private) == sorted(plain)
        for name in plain:
            np.testing.assert_allclose(private[name], plain[name], rtol=1e-6)


def test_a_clients_whole_update_is_bounded_by_clip_norm() -> None:
    mechanism = GaussianMechanism(clip_norm=1.0, noise_multiplier=0.0)
    arrays, _ = _uploads(np.random.default_rng(2), {"a.w": 1, "a.b": 1, "b.w": 1})[0]
    out = mechanism.aggregate([(arrays, 1.0)], REFERENCE, None)
    norm = np.sqrt(sum(float(np.sum((out[n] - REFERENCE[n]) ** 2)) for n in out))
    assert norm == pytest.approx(1.0, rel=1e-5)


def test_the_noise_of_a_module_is_scaled_by_the_clients_that_uploaded_it() -> None:
    # Prepare: identical zero updates, so the output is the noise alone; module b held by 2 of 5.
    uploads = [
        ({n: np.zeros_like(a) for n, a in REFERENCE.items() if k < 2 or n.startswith("a.")}, 1.0) for k in range(5)
    ]
    mechanism = GaussianMechanism(clip_norm=1.0, noise_multiplier=2.0)

    # Execute: many draws
    draws = [mechanism.aggregate(uploads, REFERENCE, np.random.default_rng(s)) for s in range(3000)]

    # Assert: std sigma * C / holders per name
    assert np.std([d["a.w"] for d in draws]) == pytest.approx(2.0 / 5, rel=0.05)
    assert np.std([d["b.w"] for d in draws]) == pytest.approx(2.0 / 2, rel=0.05)


@pytest.mark.parametrize(
    ("sigma", "rates", "delta"), [(1.0, [0.1] * 20, 1e-5), (0.7, [0.5, 0.5, 1.0], 1e-3), (3.0, [1.0] * 50, 1e-6)]
)
def test_the_epsilon_is_opacus_rdp_accountants_for_the_same_noise_sampling_and_steps(sigma, rates, delta) -> None:
    # Prepare: Opacus's accountant stepped by hand.
    accountant = RDPAccountant()
    for rate in rates:
        accountant.step(noise_multiplier=sigma, sample_rate=rate)

    # Execute / Assert
    assert client_level_epsilon(sigma, rates, delta) == pytest.approx(accountant.get_epsilon(delta), rel=1e-12)


def test_a_private_federation_records_the_epsilon_spent_each_round_and_resumes_it(make_toy, tmp_path) -> None:
    # Prepare: the toy method with the Gaussian mechanism, 3 of 6 clients per round.
    def toy(rounds: int):
        made = make_toy(
            rounds=rounds, schedule=Schedule(num_clients=6, clients_per_round=3), checkpoint=tmp_path / "c.npz"
        )
        made.federation.aggregator = GaussianMechanism(clip_norm=1.0, noise_multiplier=1.1)
        made.federation.privacy = PrivacyBudget(1.1, 1e-5)
        return made

    # Execute
    first = toy(2).federation.run()
    resumed = toy(4).federation.run(resume=True)

    # Assert: growing epsilon, equal to the accountant's after k rounds at rate 0.5.
    epsilons = [r.metrics["dp_epsilon"] for r in resumed]
    assert epsilons[:2] == [r.metrics["dp_epsilon"] for r in first]
    assert epsilons == sorted(epsilons)
    assert epsilons[0] > 0
    assert epsilons[-1] == pytest.approx(client_level_epsilon(1.1, [0.5] * 4, 1e-5))


def test_a_round_that_adds_no_noise_records_no_epsilon(make_toy) -> None:
    # Prepare: the private toy method, whose round 2 aggregates nothing (as a round without uploads)
    made = make_toy(rounds=3, schedule=Schedule(num_clients=6, clients_per_round=3))
    made.federation.aggregator = GaussianMechanism(clip_norm=1.0, noise_multiplier=1.1)
    made.federation.privacy = PrivacyBudget(1.1, 1e-5)
    aggregating = made.server.run_round
    made.server.run_round = lambda ctx: {} if ctx.round == 2 else aggregating(ctx)  # type: ignore[method-assign]

    # Execute
    history = made.federation.run()

    # Assert: round 2 spends nothing and reports no epsilon; round 3 is the second step
    assert [r.status for r in history] == ["ok", "ok", "ok"]
    assert "dp_epsilon" not in history[1].metrics
    assert "dp_sample_rate" not in history[1].metrics
    assert history[2].metrics["dp_epsilon"] == pytest.approx(client_level_epsilon(1.1, [0.5, 0.5], 1e-5))


def test_a_budget_beside_a_rule_without_noise_reports_no_epsilon(make_toy) -> None:
    # Prepare: a budget, but the plain mean (nothing to account)
    made = make_toy(rounds=2)
    made.federation.privacy = PrivacyBudget(1.1, 1e-5)

    # Execute
    history = made.federation.run()

    # Assert
    assert not any("dp_epsilon" in r.metrics for r in history)


def test_a_second_noised_aggregation_in_a_round_is_refused() -> None:
    # Prepare
    ctx = RoundContext(round=1, clients=[0], seed=0, grid=None, aggregator=GaussianMechanism(1.0, 1.0))  # type: ignore[arg-type]
    parts = [({"l.w": np.ones(2)}, 1.0)]
    ctx.aggregate(parts, {"l.w": np.zeros(2)})

    # Execute / Assert
    with pytest.raises(ValueError, match="second noised aggregation"):
        ctx.aggregate(parts, {"l.w": np.zeros(2)})
