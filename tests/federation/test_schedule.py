"""Schedule: who is available, who is sampled and who fails, from derived randomness."""

import numpy as np
import pytest

from fedmosaic.federation import Schedule


def test_a_client_joining_at_round_r_is_unavailable_before_r() -> None:
    # Prepare
    schedule = Schedule(num_clients=4, joins={2: 3})

    # Execute / Assert
    assert schedule.available(1) == [0, 1, 3]
    assert schedule.available(2) == [0, 1, 3]
    assert schedule.available(3) == [0, 1, 2, 3]
    assert schedule.available(10) == [0, 1, 2, 3]


def test_a_client_leaving_at_round_r_is_unavailable_from_r_on() -> None:
    # Prepare
    schedule = Schedule(num_clients=3, leaves={0: 4})

    # Execute / Assert
    assert schedule.available(3) == [0, 1, 2]
    assert schedule.available(4) == [1, 2]
    assert schedule.available(9) == [1, 2]


def test_join_and_leave_bound_a_window_of_availability() -> None:
    schedule = Schedule(num_clients=2, joins={1: 2}, leaves={1: 4})
    assert [1 in schedule.available(r) for r in range(1, 6)] == [False, True, True, False, False]


def test_a_client_never_sampled_outside_its_availability() -> None:
    # Prepare
    schedule = Schedule(num_clients=10, fraction=0.5, joins={7: 5}, leaves={2: 3})

    # Execute
    samples = {rnd: schedule.sample(rnd, seed=1) for rnd in range(1, 20)}

    # Assert
    assert all(7 not in samples[r] for r in range(1, 5))
    assert all(2 not in samples[r] for r in range(3, 20))
    assert any(7 in samples[r] for r in range(5, 20))


@pytest.mark.parametrize(("fraction", "expected"), [(1.0, 10), (0.3, 3), (0.71, 7), (0.01, 1)])
def test_fraction_sets_the_sample_size_with_at_least_one_client(fraction: float, expected: int) -> None:
    schedule = Schedule(num_clients=10, fraction=fraction)
    assert len(schedule.sample(1, seed=0)) == expected


def test_fraction_is_a_share_of_the_available_clients_only() -> None:
    # Prepare: 4 of 10 clients join late, so 6 are available in round 1
    schedule = Schedule(num_clients=10, fraction=0.5, joins={6: 2, 7: 2, 8: 2, 9: 2})

    # Execute / Assert
    assert len(schedule.sample(1, seed=0)) == 3
    assert len(schedule.sample(2, seed=0)) == 5


def test_clients_per_round_overrides_fraction_and_is_capped_by_availability() -> None:
    # Prepare
    exact = Schedule(num_clients=10, fraction=0.1, clients_per_round=4)
    capped = Schedule(num_clients=10, clients_per_round=4, joins=dict.fromkeys(range(8), 3))

    # Execute / Assert
    assert len(exact.sample(1, seed=0)) == 4
    assert capped.sample(1, seed=0) == [8, 9]
    assert len(capped.sample(3, seed=0)) == 4


def test_sampling_is_deterministic_per_seed_and_round_sorted_and_without_repeats() -> None:
    # Prepare
    schedule = Schedule(num_clients=20, clients_per_round=5)

    # Execute
    first = [schedule.sample(rnd, seed=3) for rnd in range(1, 30)]
    again = [schedule.sample(rnd, seed=3) for rnd in range(1, 30)]
    other_seed = [schedule.sample(rnd, seed=4) for rnd in range(1, 30)]

    # Assert
    assert first == again
    assert first != other_seed
    assert len({tuple(s) for s in first}) > 1, "different rounds should draw different clients"
    for sample in first:
        assert sample == sorted(sample)
        assert len(set(sample)) == 5
        assert all(isinstance(c, int) and 0 <= c < 20 for c in sample)


def test_sampling_does_not_depend_on_earlier_calls() -> None:
    """Round 7's sample is the same whether or not rounds 1..6 were sampled (resume)."""
    schedule = Schedule(num_clients=20, clients_per_round=5)
    direct = schedule.sample(7, seed=3)
    for rnd in range(1, 7):
        schedule.sample(rnd, seed=3)
    assert schedule.sample(7, seed=3) == direct


def test_no_available_client_samples_nobody() -> None:
    schedule = Schedule(num_clients=2, joins={0: 3, 1: 3})
    assert schedule.sample(1, seed=0) == []


def test_dropout_rate_is_roughly_as_configured_over_many_rounds() -> None:
    # Prepare
    schedule = Schedule(num_clients=10, dropout=0.3)
    clients = list(range(10))

    # Execute
    failed = sum(len(schedule.failing(rnd, clients, seed=0)) for rnd in range(1, 301))

    # Assert
    rate = failed / (300 * 10)
    assert 0.26 < rate < 0.34


def test_dropout_is_deterministic_and_depends_on_the_seed() -> None:
    # Prepare
    schedule = Schedule(num_clients=10, dropout=0.4)
    clients = list(range(10))

    # Execute
    first = [schedule.failing(rnd, clients, seed=5) for rnd in range(1, 20)]
    again = [schedule.failing(rnd, clients, seed=5) for rnd in range(1, 20)]
    other = [schedule.failing(rnd, clients, seed=6) for rnd in range(1, 20)]

    # Assert
    assert first == again
    assert first != other


def test_a_clients_dropout_does_not_depend_on_who_else_is_sampled() -> None:
    schedule = Schedule(num_clients=10, dropout=0.5)
    everyone = schedule.failing(4, list(range(10)), seed=2)
    for client in range(10):
        alone = schedule.failing(4, [client], seed=2)
        assert (client in alone) == (client in everyone)


def test_failing_clients_are_among_the_sampled_ones() -> None:
    schedule = Schedule(num_clients=10, dropout=0.5, failures={3: frozenset({0, 9})})
    sampled = [1, 2, 9]
    for rnd in range(1, 30):
        assert schedule.failing(rnd, sampled, seed=0) <= frozenset(sampled)


def test_no_dropout_means_no_failure() -> None:
    schedule = Schedule(num_clients=10)
    assert all(schedule.failing(rnd, list(range(10)), seed=0) == frozenset() for rnd in range(1, 50))


def test_forced_failures_apply_in_their_round_only_and_to_sampled_clients() -> None:
    # Prepare
    schedule = Schedule(num_clients=5, failures={2: frozenset({1, 3})})

    # Execute / Assert
    assert schedule.failing(2, [0, 1, 2, 3, 4], seed=0) == frozenset({1, 3})
    assert schedule.failing(2, [0, 1, 2], seed=0) == frozenset({1})
    assert schedule.failing(1, [0, 1, 2, 3, 4], seed=0) == frozenset()
    assert schedule.failing(3, [0, 1, 2, 3, 4], seed=0) == frozenset()


def test_forced_failures_add_to_random_dropouts() -> None:
    # Prepare
    random_only = Schedule(num_clients=10, dropout=0.3)
    forced = Schedule(num_clients=10, dropout=0.3, failures={1: frozenset({0, 1})})
    clients = list(range(10))

    # Execute / Assert
    expected = random_only.failing(1, clients, seed=0) | {0, 1}
    assert forced.failing(1, clients, seed=0) == expected


@pytest.mark.parametrize(
    ("kwargs", "parameter"),
    [
        ({"num_clients": 0}, "num_clients"),
        ({"num_clients": 3, "fraction": 0.0}, "fraction"),
        ({"num_clients": 3, "fraction": 1.5}, "fraction"),
        ({"num_clients": 3, "clients_per_round": 0}, "clients_per_round"),
        ({"num_clients": 3, "dropout": 1.0}, "dropout"),
        ({"num_clients": 3, "dropout": -0.1}, "dropout"),
        ({"num_clients": 3, "min_replies": 0}, "min_replies"),
        ({"num_clients": 3, "joins": {3: 2}}, "joins"),
        ({"num_clients": 3, "joins": {1: 0}}, "joins"),
        ({"num_clients": 3, "leaves": {-1: 2}}, "leaves"),
        ({"num_clients": 3, "leaves": {1: 0}}, "leaves"),
    ],
)
def test_invalid_parameters_are_rejected_naming_the_parameter(kwargs: dict, parameter: str) -> None:
    with pytest.raises(ValueError, match=parameter):
        Schedule(**kwargs)


def test_the_rate_of_sampling_is_fair_across_clients() -> None:
    """Over many rounds every client is sampled about ``fraction`` of the time."""
    schedule = Schedule(num_clients=8, fraction=0.5)
    counts = np.zeros(8)
    for rnd in range(1, 401):
        counts[schedule.sample(rnd, seed=0)] += 1
    assert np.all(np.abs(counts / 400 - 0.5) < 0.1)
