"""Specification of the fusion of local posteriors."""

import pytest
import torch

from fedmosaic.methods.vertical.false_vfl.fusion import fuse_posteriors


@pytest.mark.parametrize("rule", ["mean", "poe"])
@pytest.mark.parametrize("party", [0, 1, 2])
def test_one_present_party_gives_its_own_posterior(rule: str, party: int) -> None:
    # Prepare
    generator = torch.Generator().manual_seed(party)
    mean, logvar = torch.randn(4, 3, 5, generator=generator), torch.randn(4, 3, 5, generator=generator)
    present = torch.zeros(4, 3, dtype=torch.bool)
    present[:, party] = True

    # Execute
    fused_mean, fused_logvar = fuse_posteriors(mean, logvar, present, rule)  # type: ignore[arg-type]

    # Assert
    torch.testing.assert_close(fused_mean, mean[:, party])
    torch.testing.assert_close(fused_logvar, logvar[:, party])


@pytest.mark.parametrize("rule", ["mean", "poe"])
def test_absent_parties_do_not_matter(rule: str) -> None:
    # Prepare
    generator = torch.Generator().manual_seed(0)
    mean, logvar = torch.randn(6, 4, 2, generator=generator), torch.randn(6, 4, 2, generator=generator)
    present = torch.rand(6, 4, generator=generator) < 0.5
    present[:, 0] = True
    changed_mean, changed_logvar = mean.clone(), logvar.clone()
    changed_mean[~present] = 99.0
    changed_logvar[~present] = -5.0

    # Execute
    first = fuse_posteriors(mean, logvar, present, rule)  # type: ignore[arg-type]
    again = fuse_posteriors(changed_mean, changed_logvar, present, rule)  # type: ignore[arg-type]

    # Assert
    torch.testing.assert_close(first, again)


def test_mean_rule_averages_means_and_sums_precisions() -> None:
    # Prepare: present parties 0 and 2 with variances 1 and 4
    mean = torch.tensor([[[1.0], [50.0], [4.0]]])
    logvar = torch.log(torch.tensor([[[1.0], [7.0], [4.0]]]))
    present = torch.tensor([[True, False, True]])

    # Execute
    fused_mean, fused_logvar = fuse_posteriors(mean, logvar, present, "mean")

    # Assert
    torch.testing.assert_close(fused_mean, torch.tensor([[2.5]]))
    torch.testing.assert_close(fused_logvar.exp(), torch.tensor([[1 / (1 + 0.25)]]))


def test_product_of_experts_weights_means_by_precision() -> None:
    mean = torch.tensor([[[1.0], [4.0]]])
    logvar = torch.log(torch.tensor([[[1.0], [4.0]]]))
    fused_mean, fused_logvar = fuse_posteriors(mean, logvar, torch.tensor([[True, True]]), "poe")
    torch.testing.assert_close(fused_mean, torch.tensor([[(1 * 1 + 4 * 0.25) / 1.25]]))
    torch.testing.assert_close(fused_logvar.exp(), torch.tensor([[0.8]]))
