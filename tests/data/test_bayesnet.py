"""Specification of the Bayesian-network concept datasets (F-CMs data)."""

import itertools
from typing import Any

import numpy as np
import pytest
from pgmpy.factors import factor_product
from pgmpy.factors.discrete import TabularCPD
from pgmpy.models import DiscreteBayesianNetwork

from fedmosaic.data.bayesnet import (
    NOISE_SHARE,
    ConceptDataset,
    ConceptSplits,
    bayes_optimal_accuracy,
    forward_sample,
    load_network,
    network_names,
    one_hot_inputs,
    sample_concept_splits,
)
from fedmosaic.data.concept_inputs import probe_accuracy
from fedmosaic.errors import ConfigError, FedmosaicError

ASIA_SAMPLES = 2000


@pytest.fixture(scope="module")
def asia() -> ConceptSplits:
    return sample_concept_splits("asia", seed=0, n_samples=ASIA_SAMPLES)


def tiny_network() -> DiscreteBayesianNetwork:
    """``a -> t -> c``: the task ``t`` has a parent and a child, so its posterior needs both."""
    model = DiscreteBayesianNetwork([("a", "t"), ("t", "c")])
    model.add_cpds(
        TabularCPD("a", 2, [[0.3], [0.7]], state_names={"a": ["lo", "hi"]}),
        TabularCPD(
            "t",
            3,
            [[0.6, 0.1], [0.3, 0.3], [0.1, 0.6]],
            evidence=["a"],
            evidence_card=[2],
            state_names={"t": ["x", "y", "z"], "a": ["lo", "hi"]},
        ),
        TabularCPD(
            "c",
            2,
            [[0.9, 0.5, 0.2], [0.1, 0.5, 0.8]],
            evidence=["t"],
            evidence_card=[3],
            state_names={"c": ["off", "on"], "t": ["x", "y", "z"]},
        ),
    )
    return model


def tiny_joint(model: DiscreteBayesianNetwork) -> np.ndarray:
    """P(a, t, c) by the chain rule, indexed by the CPD state positions."""
    p_a = model.get_cpds("a").values
    p_t = model.get_cpds("t").values  # (t, a)
    p_c = model.get_cpds("c").values  # (c, t)
    return p_a[:, None, None] * p_t.T[:, :, None] * p_c.T[None, :, :]


def test_same_seed_gives_identical_splits_and_another_seed_does_not() -> None:
    # Prepare
    def draw(seed: int) -> ConceptSplits:
        return sample_concept_splits("asia", seed=seed, n_samples=300, epochs=1)

    # Execute
    first, again, other = draw(3), draw(3), draw(4)

    # Assert
    for split in ("train", "val", "test"):
        np.testing.assert_array_equal(getattr(first, split).x, getattr(again, split).x)
        np.testing.assert_array_equal(getattr(first, split).concepts, getattr(again, split).concepts)
    assert not np.array_equal(first.train.concepts, other.train.concepts)
    assert not np.allclose(first.train.x, other.train.x)


def test_splits_hold_70_10_20_percent_of_the_samples(asia: ConceptSplits) -> None:
    # Execute
    sizes = [len(asia.train), len(asia.val), len(asia.test)]

    # Assert
    assert sizes == [1400, 200, 400]


def test_x_has_32_columns_for_asia_and_is_standardised_on_train(asia: ConceptSplits) -> None:
    # Execute
    x = asia.train.x

    # Assert
    assert x.shape == (1400, 32)
    assert x.dtype == np.float32
    np.testing.assert_allclose(x.mean(axis=0), 0, atol=1e-5)
    np.testing.assert_allclose(x.std(axis=0), 1, atol=1e-4)
    assert abs(float(asia.test.x.mean())) < 0.2
    assert 0.8 < float(asia.test.x.std()) < 1.2


def test_latent_width_is_configurable() -> None:
    # Execute
    splits = sample_concept_splits("asia", seed=0, n_samples=100, latent_dim=8, epochs=1)

    # Assert
    assert splits.train.x.shape == (70, 8)


@pytest.mark.parametrize("share", [0.3, 0.7])
def test_the_noise_share_is_measured_against_a_unit_scale_latent(share: float) -> None:
    # Prepare: the same seed with clean inputs gives the (standardised) latent itself.
    clean = sample_concept_splits("asia", seed=0, n_samples=ASIA_SAMPLES, noise_share=0.0)

    # Execute
    noisy = sample_concept_splits("asia", seed=0, n_samples=ASIA_SAMPLES, noise_share=share)

    # Assert: x = (1 - s) z + s e with z and e of unit scale, so each column correlates with
    # the latent by (1 - s) / sqrt((1 - s)^2 + s^2), whatever the autoencoder's own scale.
    expected = (1 - share) / np.hypot(1 - share, share)
    correlations = [np.corrcoef(clean.train.x[:, j], noisy.train.x[:, j])[0, 1] for j in range(32)]
    assert np.mean(correlations) == pytest.approx(expected, abs=0.03)
    np.testing.assert_allclose(clean.train.x.std(axis=0), 1, atol=1e-4)


def test_the_default_noise_share_is_the_documented_constant() -> None:
    # Execute
    default = sample_concept_splits("asia", seed=1, n_samples=300, epochs=1)
    explicit = sample_concept_splits("asia", seed=1, n_samples=300, epochs=1, noise_share=NOISE_SHARE)

    # Assert
    assert 0 < NOISE_SHARE < 1
    np.testing.assert_array_equal(default.train.x, explicit.train.x)


def test_autoencoder_inputs_are_every_concept_but_the_task(asia: ConceptSplits) -> None:
    # Prepare
    data = asia.train
    scrambled = data.concepts.copy()
    task_column = data.names.index("dysp")
    scrambled[:, task_column] = 1 - scrambled[:, task_column]

    # Execute
    encoded = one_hot_inputs(data.concepts, data.names, data.cardinalities, asia.inputs)
    encoded_scrambled = one_hot_inputs(scrambled, data.names, data.cardinalities, asia.inputs)

    # Assert
    assert asia.inputs == tuple(name for name in data.names if name != "dysp")
    assert encoded.shape == (1400, 14)  # 7 binary concepts
    np.testing.assert_array_equal(encoded, encoded_scrambled)


def test_concepts_are_coded_by_the_state_order_of_their_cpd(asia: ConceptSplits) -> None:
    # Prepare
    data = asia.train

    # Execute
    visited_asia = float(np.mean(data.columns(["asia"]) == data.states["asia"].index("yes")))
    smokers = float(np.mean(data.columns(["smoke"]) == data.states["smoke"].index("yes")))

    # Assert
    assert data.states["asia"] == ["yes", "no"]
    assert data.cardinalities["asia"] == 2
    assert visited_asia < 0.03  # P(asia = yes) = 0.01
    assert 0.45 < smokers < 0.55  # P(smoke = yes) = 0.5
    assert data.task == asia.task == "dysp"
    assert "dysp" in data.names
    assert set(asia.graph_edges) >= {("asia", "tub"), ("either", "dysp"), ("bronc", "dysp")}


def test_forward_sampling_follows_the_joint_distribution() -> None:
    # Prepare
    model = tiny_network()
    joint = tiny_joint(model)

    # Execute
    samples = forward_sample(model, 40_000, np.random.default_rng(0))

    # Assert
    assert list(model.nodes()) == ["a", "t", "c"]
    counts = np.zeros_like(joint)
    np.add.at(counts, tuple(samples.T), 1)
    np.testing.assert_allclose(counts / len(samples), joint, atol=0.01)


def test_forward_sampling_leaves_numpys_global_generator_untouched() -> None:
    # Prepare
    before = np.random.get_state()[1].copy()  # noqa: NPY002 - the legacy global generator is what must stay untouched

    # Execute
    forward_sample(tiny_network(), 10, np.random.default_rng(0))

    # Assert
    np.testing.assert_array_equal(np.random.get_state()[1], before)  # noqa: NPY002


def test_bayes_optimal_accuracy_equals_brute_force_on_a_tiny_network() -> None:
    # Prepare
    model = tiny_network()
    joint = tiny_joint(model)
    rows = np.array(list(itertools.product(range(2), range(3), range(2))) * 3)  # (a, t, c)
    rows = rows[np.random.default_rng(0).permutation(len(rows))[:25]]
    best_t = joint.argmax(axis=1)  # argmax over t of P(a, t, c) = argmax of P(t | a, c)
    expected = float(np.mean(best_t[rows[:, 0], rows[:, 2]] == rows[:, 1]))

    # Execute
    accuracy = bayes_optimal_accuracy(model, "t", rows, ["a", "t", "c"])

    # Assert
    assert accuracy == pytest.approx(expected)


def test_bayes_optimal_accuracy_of_asia_dysp_is_about_85_percent(asia: ConceptSplits) -> None:
    # Prepare: the exact ceiling sums, over (either, bronc), the largest P(dysp, either, bronc)
    model = load_network("asia")
    joint = factor_product(*(cpd.to_factor() for cpd in model.get_cpds()))
    joint.marginalize([node for node in joint.variables if node not in ("dysp", "either", "bronc")])
    ceiling = float(joint.values.max(axis=joint.variables.index("dysp")).sum())
    samples = forward_sample(model, 20_000, np.random.default_rng(0))

    # Execute
    on_samples = bayes_optimal_accuracy(model, "dysp", samples, list(model.nodes()))
    on_test_split = bayes_optimal_accuracy(model, "dysp", asia.test.concepts, asia.test.names)

    # Assert: 0.853, above the ~0.80 F-CMs reports for trained models; 400 test rows vary by ~0.02
    assert ceiling == pytest.approx(0.8528, abs=1e-4)
    assert on_samples == pytest.approx(ceiling, abs=0.01)
    assert 0.80 < on_test_split < 0.90
    assert asia.bayes_optimal_accuracy == on_test_split  # the splits carry their test split's ceiling


def test_unknown_network_is_a_one_line_config_error_with_a_suggestion() -> None:
    # Execute
    with pytest.raises(ConfigError) as caught:
        load_network("asai")

    # Assert
    assert caught.value.field == "data.network"
    assert "did you mean 'asia'?" in str(caught.value)
    assert "\n" not in str(caught.value)
    assert {"asia", "sachs", "alarm", "insurance", "hailfinder"} <= set(network_names())


def test_unknown_task_is_a_one_line_config_error_with_a_suggestion() -> None:
    # Execute
    with pytest.raises(ConfigError) as caught:
        sample_concept_splits("asia", seed=0, task="dysq")

    # Assert
    assert caught.value.field == "data.task"
    assert "did you mean 'dysp'?" in str(caught.value)
    assert "\n" not in str(caught.value)


def test_network_without_default_task_needs_one_and_then_works() -> None:
    # Execute
    with pytest.raises(ConfigError, match="has no default task") as caught:
        sample_concept_splits("cancer", seed=0)
    splits = sample_concept_splits("cancer", seed=0, task="Dyspnoea", n_samples=50, epochs=1)

    # Assert
    assert caught.value.field == "data.task"
    assert splits.task == "Dyspnoea"
    assert splits.train.x.shape == (35, 64)


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"n_samples": 5}, "data.n_samples"),
        ({"latent_dim": 0}, "data.latent_dim"),
        ({"epochs": 0}, "data.epochs"),
        ({"noise_share": 1.0}, "data.noise_share"),
        ({"noise_share": -0.1}, "data.noise_share"),
    ],
)
def test_sizes_out_of_range_are_config_errors(options: dict[str, Any], field: str) -> None:
    # Execute
    with pytest.raises(ConfigError) as caught:
        sample_concept_splits("asia", seed=0, **options)

    # Assert
    assert caught.value.field == field


def test_concept_dataset_subset_copies_rows_and_rejects_bad_codes() -> None:
    # Prepare
    data = ConceptDataset(
        x=np.arange(6, dtype=np.float32).reshape(3, 2),
        concepts=np.array([[0, 1], [1, 1], [1, 0]]),
        names=("rain", "wet"),
        task="wet",
        cardinalities={"rain": 2, "wet": 2},
        states={"rain": ["no", "yes"], "wet": ["no", "yes"]},
    )

    # Execute
    part = data.subset([2, 0])

    # Assert
    assert part.concepts.tolist() == [[1, 0], [0, 1]]
    assert part.x.tolist() == [[4, 5], [0, 1]]
    with pytest.raises(FedmosaicError, match="cardinality"):
        ConceptDataset(data.x, data.concepts + 1, data.names, "wet", data.cardinalities, data.states)


def _reference(**options: Any) -> ConceptSplits:
    return sample_concept_splits("asia", seed=0, n_samples=ASIA_SAMPLES, mode="reference", epochs=40, **options)


def test_the_reference_mode_mixes_the_noise_on_the_raw_latent() -> None:
    # Prepare: the same seed without noise gives the (standardised) raw latent
    clean = _reference(noise_share=0.0)

    # Execute
    noisy = _reference(noise_share=0.5)

    # Assert: x = (1 - s) z + s e with z of scale std < 1, so the latent weighs less than (1 - s) / sqrt(...)
    # says for a unit-scale one; the correlation is that of a unit-scale share s / (s + (1 - s) std)
    std = noisy.latent_std
    share = 0.5 / (0.5 + 0.5 * std)
    live = clean.train.x.std(axis=0) > 0.5  # dimensions the LeakyReLU did not leave constant
    correlations = [np.corrcoef(clean.train.x[:, j], noisy.train.x[:, j])[0, 1] for j in np.flatnonzero(live)]
    assert 0 < std < 1
    assert np.mean(correlations) == pytest.approx((1 - share) / np.hypot(1 - share, share), abs=0.1)
    assert np.mean(correlations) < (1 - 0.5) / np.hypot(0.5, 0.5)


def test_leaking_the_task_puts_it_among_the_encoded_variables_and_lifts_the_probe() -> None:
    # Execute
    sealed, leaked = _reference(noise_share=0.0), _reference(noise_share=0.0, leak_task=True)
    probes = [
        probe_accuracy(s.train.x, s.train.columns(["dysp"])[:, 0], s.test.x, s.test.columns(["dysp"])[:, 0])
        for s in (sealed, leaked)
    ]

    # Assert: clean inputs that encode the task give it away to a linear probe, as the splits record
    assert [s.probe_accuracy for s in (sealed, leaked)] == probes
    assert "dysp" not in sealed.inputs
    assert "dysp" in leaked.inputs
    assert probes[1] > probes[0] + 0.05
    assert probes[1] > 0.95


def test_the_reference_mode_is_deterministic_and_an_unknown_mode_is_refused() -> None:
    # Execute / Assert
    np.testing.assert_array_equal(_reference(noise_share=0.5).test.x, _reference(noise_share=0.5).test.x)
    with pytest.raises(ConfigError) as caught:
        sample_concept_splits("asia", seed=0, n_samples=100, mode="refrence")
    assert caught.value.field == "data.inputs"
    assert "reference" in str(caught.value)
