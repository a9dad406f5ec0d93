"""Model split: encoder = model[:split], decoder = model[split:], with the default rule."""

import pytest
import torch
from torch import nn

from fedmosaic.methods.horizontal.fedcfa.split import default_split, split_model
from fedmosaic.methods.horizontal.models import ModelParams, build_model


def test_default_split_of_an_mlp_is_after_the_first_hidden_activation() -> None:
    # Prepare
    model = build_model(ModelParams(hidden=[5, 7]), (2, 3), 4)
    # Execute
    encoder, _decoder = split_model(model)
    # Assert
    assert default_split(model) == 3
    assert isinstance(encoder[-1], nn.ReLU)
    assert encoder(torch.zeros(6, 2, 3)).shape == (6, 5)


def test_default_split_of_a_cnn_is_after_the_first_block_and_factors_are_its_channels() -> None:
    # Prepare: blocks conv-relu-pool (3 channels) and conv-relu-pool (6 channels), then the classifier
    model = build_model(ModelParams(kind="cnn", channels=[3, 6]), (1, 8, 8), 4)
    # Execute
    encoder, decoder = split_model(model)
    # Assert: the decoder is the second block and the classifier, more than one linear layer
    assert [type(m) for m in encoder] == [nn.Conv2d, nn.ReLU, nn.MaxPool2d]
    assert isinstance(decoder[0], nn.Conv2d)
    assert isinstance(decoder[-1], nn.Linear)
    assert encoder(torch.zeros(2, 1, 8, 8)).shape == (2, 3, 4, 4)


def test_split_shares_modules_so_the_parts_compose_to_the_model() -> None:
    # Prepare
    model = build_model(ModelParams(hidden=[5, 7]), (4,), 3)
    x = torch.randn(10, 4, generator=torch.Generator().manual_seed(0))
    # Execute
    encoder, decoder = split_model(model, 5)
    # Assert
    torch.testing.assert_close(decoder(encoder(x)), model(x), rtol=0, atol=0)
    assert decoder[0] is model[5]
    parts = {**dict(encoder.named_parameters()), **dict(decoder.named_parameters())}
    assert parts == dict(model.named_parameters()), "same tensors under the same names"


@pytest.mark.parametrize("split", [0, 6])
def test_a_split_leaving_a_part_empty_is_rejected(split: int) -> None:
    # Prepare
    model = build_model(ModelParams(hidden=[5, 7]), (4,), 3)
    # Execute / Assert
    with pytest.raises(ValueError, match=r"split must be in \[1, 5\]"):
        split_model(model, split)


def test_models_without_a_default_split_or_not_sequential_are_rejected() -> None:
    # Prepare
    linear = build_model(ModelParams(hidden=[]), (4,), 3)
    # Execute / Assert
    with pytest.raises(ValueError, match="set split"):
        split_model(linear)
    with pytest.raises(TypeError, match=r"nn\.Sequential"):
        split_model(nn.Linear(4, 3), 1)
