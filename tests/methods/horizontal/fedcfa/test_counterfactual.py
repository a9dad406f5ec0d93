"""Factor scores, top-k masks, counterfactual samples and their soft labels."""

import pytest
import torch
from torch import nn

from fedmosaic.methods.horizontal.fedcfa.counterfactual import (
    SelectionRule,
    clip_k,
    counterfactuals,
    factor_scores,
    negative_target,
    replace_factors,
    select_factors,
)


def _linear_decoder(weight: torch.Tensor) -> nn.Linear:
    decoder = nn.Linear(weight.shape[1], weight.shape[0])
    with torch.no_grad():
        decoder.weight.copy_(weight)
        decoder.bias.zero_()
    return decoder


def test_scores_of_a_linear_decoder_are_the_true_class_weight_rows() -> None:
    # Prepare: d logit_c / dz = W[c], whatever z
    weight = torch.tensor([[1.0, -2.0, 0.5, 3.0], [0.0, 4.0, -1.0, 2.0], [-3.0, 1.0, 2.0, 0.0]])
    z = torch.randn(4, 4, generator=torch.Generator().manual_seed(0))
    y = torch.tensor([2, 0, 1, 0])
    # Execute
    scores = factor_scores(_linear_decoder(weight), z, y)
    # Assert
    torch.testing.assert_close(scores, weight[y])
    assert not z.requires_grad


def test_scores_of_feature_maps_are_spatial_means_of_the_signed_gradient() -> None:
    # Prepare: factors of 3 channels of 2x2; decoder = flatten + linear
    weight = torch.arange(2 * 12, dtype=torch.float32).reshape(2, 12) - 10.0
    decoder = nn.Sequential(nn.Flatten(), _linear_decoder(weight))
    y = torch.tensor([1, 0])
    # Execute
    scores = factor_scores(decoder, torch.rand(2, 3, 2, 2), y)
    # Assert
    torch.testing.assert_close(scores, weight[y].reshape(2, 3, 4).mean(dim=2))


def test_scores_are_per_sample_through_a_nonlinear_decoder() -> None:
    # Prepare: with ReLU the gradient depends on each sample's own factors
    decoder = nn.Sequential(nn.ReLU(), _linear_decoder(torch.tensor([[1.0, 2.0], [3.0, 4.0]])))
    z = torch.tensor([[1.0, -1.0], [-1.0, 1.0]])
    # Execute
    scores = factor_scores(decoder, z, torch.tensor([1, 1]))
    # Assert
    torch.testing.assert_close(scores, torch.tensor([[3.0, 0.0], [0.0, 4.0]]))


SCORES = torch.tensor([[0.5, -2.0, 3.0, 1.0, -1.0, 0.0], [6.0, 5.0, 4.0, -3.0, 2.0, 1.0]])


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        ("signed-smallest", [[0, 1, 0, 0, 1, 0], [0, 0, 0, 1, 0, 1]]),  # the most negative gradients
        ("signed-largest", [[0, 0, 1, 1, 0, 0], [1, 1, 0, 0, 0, 0]]),
        ("magnitude-smallest", [[1, 0, 0, 0, 0, 1], [0, 0, 0, 0, 1, 1]]),  # closest to zero
        ("magnitude-largest", [[0, 1, 1, 0, 0, 0], [1, 1, 0, 0, 0, 0]]),
    ],
)
def test_each_rule_picks_each_samples_k_factors_by_signed_or_absolute_score(
    rule: SelectionRule, expected: list[list[int]]
) -> None:
    # Execute
    mask = select_factors(SCORES, 2, rule)
    # Assert
    assert mask.int().tolist() == expected


def test_the_positive_and_negative_samples_follow_their_own_rules() -> None:
    # Prepare: 4 factors, k = 1; signed scores (0.1, -5, 7, 0)
    z = torch.tensor([[1.0, 2.0, 3.0, 4.0]])
    donor = torch.tensor([[10.0, 20.0, 30.0, 40.0]])
    scores = torch.tensor([[0.1, -5.0, 7.0, 0.0]])
    donor_y = torch.tensor([[0.5, 0.5]])
    # Execute
    samples = counterfactuals(
        z, torch.tensor([0]), donor, donor_y, scores, k=1, rules=("magnitude-smallest", "magnitude-largest")
    )
    # Assert: |0| is the smallest magnitude, |7| the largest
    assert samples.positive.tolist() == [[1.0, 2.0, 3.0, 40.0]]
    assert samples.negative.tolist() == [[1.0, 2.0, 30.0, 4.0]]


def test_both_samples_may_use_the_same_rule() -> None:
    # Prepare
    z, donor = torch.zeros(2, 6), torch.ones(2, 6)
    # Execute
    samples = counterfactuals(
        z, torch.tensor([0, 1]), donor, torch.eye(2), SCORES, k=2, rules=("signed-largest", "signed-largest")
    )
    # Assert
    assert torch.equal(samples.positive, samples.negative)
    assert samples.positive.sum(dim=1).tolist() == [2.0, 2.0]


def test_replacement_swaps_whole_feature_maps_of_the_selected_factors() -> None:
    # Prepare
    z = torch.zeros(1, 3, 2, 2)
    donor = torch.arange(12, dtype=torch.float32).reshape(1, 3, 2, 2)
    # Execute
    mixed = replace_factors(z, donor, torch.tensor([[False, True, False]]))
    # Assert
    torch.testing.assert_close(mixed[0, 1], donor[0, 1])
    assert float(mixed[0, 0].abs().sum() + mixed[0, 2].abs().sum()) == 0.0


def test_positive_replaces_low_score_factors_and_negative_high_with_a_soft_label() -> None:
    # Prepare: 4 factors, k = 1, 3 classes; sample 0 has label 0, its drawn mean label (0.2, 0.8, 0)
    z = torch.tensor([[1.0, 2.0, 3.0, 4.0]])
    donor = torch.tensor([[10.0, 20.0, 30.0, 40.0]])
    donor_y = torch.tensor([[0.2, 0.8, 0.0]])
    scores = torch.tensor([[0.1, -5.0, 7.0, 0.0]])
    # Execute
    samples = counterfactuals(z, torch.tensor([0]), donor, donor_y, scores, k=1)
    # Assert
    assert samples.positive.tolist() == [[1.0, 20.0, 3.0, 4.0]]
    assert samples.negative.tolist() == [[1.0, 2.0, 30.0, 4.0]]
    torch.testing.assert_close(samples.negative_target, torch.tensor([[0.75 + 0.25 * 0.2, 0.25 * 0.8, 0.0]]))


def test_soft_label_uses_the_share_of_factors_replaced_as_in_the_reference() -> None:
    # Prepare: the reference replaces 24 of 64 channels
    y = torch.tensor([[0.0, 1.0, 0.0]])
    y_bar = torch.tensor([[0.5, 0.0, 0.5]])
    # Execute
    target = negative_target(y, y_bar, 24 / 64)
    # Assert
    torch.testing.assert_close(target, 0.625 * y + 0.375 * y_bar)
    assert float(target.sum()) == pytest.approx(1.0)


def test_k_is_clipped_to_half_the_factors() -> None:
    # Execute / Assert
    assert clip_k(24, 64) == 24
    assert clip_k(24, 8) == 4
    assert clip_k(24, 9) == 4
    with pytest.raises(ValueError, match="at least 2 factors"):
        clip_k(1, 1)


def test_with_clipped_k_the_low_and_high_sets_are_disjoint_and_the_label_share_follows() -> None:
    # Prepare: 8 factors, k = 24 -> 4
    z = torch.zeros(3, 8)
    scores = torch.randn(3, 8, generator=torch.Generator().manual_seed(1))
    # Execute
    donor_y = torch.eye(3)[[1, 2, 0]]
    samples = counterfactuals(z, torch.tensor([0, 1, 2]), torch.ones(3, 8), donor_y, scores, k=24)
    # Assert
    changed_positive = samples.positive == 1.0
    changed_negative = samples.negative == 1.0
    assert changed_positive.sum(dim=1).tolist() == [4, 4, 4]
    assert not (changed_positive & changed_negative).any()
    torch.testing.assert_close(samples.negative_target, 0.5 * torch.eye(3) + 0.5 * donor_y)
