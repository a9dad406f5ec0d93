"""Specification of the block-wise missingness mechanisms."""

import numpy as np
import pytest

from fedmosaic.data.missingness import (
    MAR_RATES,
    Missingness,
    draw_mask,
    fit_mechanism,
    missing_probabilities,
    parse_missingness,
)
from fedmosaic.errors import ConfigError


def gaussian_blocks(n: int, widths: list[int], seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.normal(size=(n, w)) for w in widths]


def test_mcar_rate_matches_p_conditioned_on_one_present_party() -> None:
    # Prepare
    blocks, p, k = gaussian_blocks(40_000, [3] * 4), 0.5, 4

    # Execute
    present = draw_mask(blocks, Missingness("mcar", p), np.random.default_rng(1))

    # Assert: P(missing | not all missing) = p (1 - p^(K-1)) / (1 - p^K)
    expected = p * (1 - p ** (k - 1)) / (1 - p**k)
    assert abs((~present).mean() - expected) < 0.01
    assert present.any(axis=1).all()


def test_mcar_does_not_depend_on_values() -> None:
    # Prepare
    blocks = gaussian_blocks(20_000, [5, 5])

    # Execute
    present = draw_mask(blocks, Missingness("mcar", 0.2), np.random.default_rng(2))

    # Assert
    for k, block in enumerate(blocks):
        assert abs(np.corrcoef(block.mean(axis=1), present[:, k])[0, 1]) < 0.03


def test_mcar_zero_keeps_every_block() -> None:
    present = draw_mask(gaussian_blocks(100, [2, 2, 2]), Missingness("mcar", 0.0), np.random.default_rng(0))
    assert present.all()


@pytest.mark.parametrize("level", [1, 2])
def test_mar_keeps_the_active_block_and_hits_its_rate(level: int) -> None:
    # Prepare
    blocks = gaussian_blocks(20_000, [6, 4, 4, 4])

    # Execute
    probabilities = missing_probabilities(blocks, Missingness("mar", level), np.random.default_rng(3))
    present = draw_mask(blocks, Missingness("mar", level), np.random.default_rng(3))

    # Assert
    assert present[:, 0].all()
    np.testing.assert_allclose(probabilities[:, 1:].mean(axis=0), MAR_RATES[level], atol=1e-6)
    assert abs((~present[:, 1:]).mean() - MAR_RATES[level]) < 0.02


def test_mar_depends_on_the_active_block_only() -> None:
    # Prepare: passive blocks independent of the active one
    blocks = gaussian_blocks(20_000, [6, 4])
    active_directions = np.random.default_rng(4)

    # Execute
    probabilities = missing_probabilities(blocks, Missingness("mar", 1), active_directions)
    present = draw_mask(blocks, Missingness("mar", 1), np.random.default_rng(4))

    # Assert: the probability is a function of the active block (fitted linearly in logit)
    logit = np.log(probabilities[:, 1] / (1 - probabilities[:, 1]))
    design = np.c_[blocks[0], np.ones(len(logit))]
    residual = logit - design @ np.linalg.lstsq(design, logit, rcond=None)[0]
    assert np.abs(residual).max() < 1e-6
    assert abs(np.corrcoef(blocks[1].mean(axis=1), present[:, 1])[0, 1]) < 0.03
    assert abs(np.corrcoef(logit, present[:, 1])[0, 1]) > 0.3


@pytest.mark.parametrize("rate", [0.7, 0.9])
def test_mnar_hits_its_average_rate_and_depends_on_the_block_itself(rate: float) -> None:
    # Prepare
    blocks = gaussian_blocks(20_000, [4, 4, 4])

    # Execute
    probabilities = missing_probabilities(blocks, Missingness("mnar", rate), np.random.default_rng(5))

    # Assert
    np.testing.assert_allclose(probabilities.mean(axis=0), rate, atol=1e-6)
    for k, block in enumerate(blocks):
        logit = np.log(probabilities[:, k] / (1 - probabilities[:, k]))
        own = np.c_[block, np.ones(len(logit))]
        residual = logit - own @ np.linalg.lstsq(own, logit, rcond=None)[0]
        assert np.abs(residual).max() < 1e-6
        other = blocks[(k + 1) % 3]
        assert abs(np.corrcoef(other.mean(axis=1), logit)[0, 1]) < 0.03


def test_mnar_rows_keep_at_least_one_party() -> None:
    present = draw_mask(gaussian_blocks(5_000, [3] * 8), Missingness("mnar", 0.9), np.random.default_rng(6))
    assert present.any(axis=1).all()
    assert 0.8 < (~present).mean() < 0.9


def test_the_same_seed_gives_the_same_mask() -> None:
    blocks = gaussian_blocks(500, [3, 3, 3])
    first = draw_mask(blocks, Missingness("mnar", 0.7), np.random.default_rng(7))
    again = draw_mask(blocks, Missingness("mnar", 0.7), np.random.default_rng(7))
    np.testing.assert_array_equal(first, again)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("mcar:0.2", ("mcar", 0.2, "MCAR 2")),
        ("MAR:2", ("mar", 2.0, "MAR 2")),
        ("mnar:0.9", ("mnar", 0.9, "MNAR 9")),
        ("keep:1", ("keep", 1.0, "KEEP 1")),
    ],
)
def test_specifications_parse_to_the_papers_labels(text: str, expected: tuple[str, float, str]) -> None:
    parsed = parse_missingness(text, "vertical.train_missing")
    assert (parsed.mechanism, parsed.value, parsed.label) == expected


@pytest.mark.parametrize("text", ["mcar:1", "mar:3", "mnar:0", "mcar", "random:0.2", "keep:0", "keep:1.5"])
def test_bad_specifications_name_the_field(text: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_missingness(text, "vertical.test_missing")
    assert str(caught.value).startswith("vertical.test_missing: must be mcar:<p in [0, 1)>, mar:<1 or 2>, mnar")
    assert "keep:<whole k >= 1>" in str(caught.value)


@pytest.mark.parametrize("keep", [1, 2, 3])
def test_keep_gives_every_row_exactly_k_parties_each_equally_often_whatever_the_values(keep: int) -> None:
    # Prepare
    blocks = gaussian_blocks(20_000, [3] * 4)

    # Execute
    present = draw_mask(blocks, Missingness("keep", keep), np.random.default_rng(3))

    # Assert
    assert (present.sum(axis=1) == keep).all()
    np.testing.assert_allclose(present.mean(axis=0), keep / 4, atol=0.015)
    for k, block in enumerate(blocks):
        assert abs(np.corrcoef(block.mean(axis=1), present[:, k])[0, 1]) < 0.03


def test_keep_cannot_exceed_the_parties() -> None:
    with pytest.raises(ValueError, match="cannot keep 3 of 2 parties"):
        draw_mask(gaussian_blocks(10, [2, 2]), Missingness("keep", 3), np.random.default_rng(0))


@pytest.mark.parametrize(("mechanism", "values"), [("mar", (1, 2)), ("mnar", (0.7, 0.9))])
def test_a_fitted_mechanism_is_one_model_for_reference_and_new_rows(
    mechanism: str, values: tuple[float, float]
) -> None:
    # Prepare: reference rows, and new rows whose first half repeats them
    reference = gaussian_blocks(3000, [3, 2, 4])
    new = [np.concatenate([block[:500], block[500:1000] + 1.0]) for block in reference]

    # Execute: generators in the same state, two strengths
    weak = fit_mechanism(reference, Missingness(mechanism, values[0]), np.random.default_rng(8))  # type: ignore[arg-type]
    strong = fit_mechanism(reference, Missingness(mechanism, values[1]), np.random.default_rng(8))  # type: ignore[arg-type]

    # Assert: the same directions and standardization for both strengths; a repeated row gets its reference probability
    for party in range(3):
        assert (weak.directions[party] is None) == (strong.directions[party] is None)
        if weak.directions[party] is not None:
            np.testing.assert_array_equal(weak.directions[party], strong.directions[party])
            assert (weak.centers[party], weak.scales[party]) == (strong.centers[party], strong.scales[party])
    np.testing.assert_allclose(strong.probabilities(new)[:500], strong.probabilities(reference)[:500])
    assert not np.allclose(strong.probabilities(new)[500:], strong.probabilities(reference)[500:1000])
    rate = MAR_RATES[int(values[1])] if mechanism == "mar" else values[1]
    assert strong.probabilities(reference)[:, 1].mean() == pytest.approx(rate, abs=1e-6)


def test_a_mask_drawn_from_a_fitted_mechanism_follows_its_probabilities() -> None:
    # Prepare
    reference = gaussian_blocks(2000, [3, 3])
    model = fit_mechanism(reference, Missingness("mnar", 0.5), np.random.default_rng(1))
    rows = gaussian_blocks(4000, [3, 3])

    # Execute
    present = draw_mask(rows, Missingness("mnar", 0.5), np.random.default_rng(2), model)

    # Assert
    probabilities = model.probabilities(rows)
    for party in range(2):
        assert np.corrcoef(probabilities[:, party], ~present[:, party])[0, 1] > 0.4
