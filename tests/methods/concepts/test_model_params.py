"""The concept model's input encoder: the LeakyReLU MLP, a registered backbone over images, or a factory."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from pydantic import ValidationError
from torch import nn

from fedmosaic.errors import ConfigError
from fedmosaic.methods.concepts.model_params import ConceptModelParams
from fedmosaic.methods.concepts.models import ConceptGraph, ConceptModel

IMAGES = {"backbone": "cnn", "input_shape": [3, 16, 16], "args": {"channels": [8, 16]}}


def test_a_cnn_backbone_reads_flattened_rows_as_images_and_gives_encoder_hidden_features() -> None:
    # Prepare
    params = ConceptModelParams(**IMAGES, encoder_hidden=32)  # type: ignore[arg-type]

    # Execute
    encoder = params.build_encoder(3 * 16 * 16)
    features = encoder(torch.randn(5, 3 * 16 * 16))

    # Assert: unflattened to (3, 16, 16), two convolution blocks, 32 features after a LeakyReLU
    assert isinstance(encoder[0], nn.Unflatten)
    convolutions = [module for module in encoder.modules() if isinstance(module, nn.Conv2d)]
    assert [conv.out_channels for conv in convolutions] == [8, 16]
    assert convolutions[0].in_channels == 3
    assert features.shape == (5, 32)
    assert isinstance(encoder[-1][-1], nn.LeakyReLU)


def test_the_default_encoder_is_still_the_leaky_mlp() -> None:
    # Execute
    encoder = ConceptModelParams().build_encoder(10)

    # Assert: Linear(10, 64), LeakyReLU, Linear(64, 64), LeakyReLU: the weights' names of every earlier model
    assert [type(module).__name__ for module in encoder] == ["Linear", "LeakyReLU", "Linear", "LeakyReLU"]
    assert sorted(dict(encoder.named_parameters())) == ["0.bias", "0.weight", "2.bias", "2.weight"]


def test_a_concept_model_on_a_backbone_predicts_every_node_from_images_and_is_seeded() -> None:
    # Prepare
    graph = ConceptGraph(("colour", "accept"), "accept", {"colour": 3, "accept": 2}, {"accept": ("colour",)})
    params = ConceptModelParams(**IMAGES)  # type: ignore[arg-type]

    # Execute
    model, again = (ConceptModel(768, graph, params, seed=3) for _ in range(2))
    logits = model(torch.randn(4, 768))

    # Assert
    assert {node: tuple(value.shape) for node, value in logits.items()} == {"colour": (4, 3), "accept": (4, 2)}
    for (name, value), other in zip(model.state_dict().items(), again.state_dict().values(), strict=True):
        assert torch.equal(value, other), name


def test_an_input_shape_that_does_not_hold_the_inputs_is_one_line_naming_it() -> None:
    with pytest.raises(ConfigError, match=r"model\.input_shape: \[3, 16, 16\] holds 768 values, the inputs have 700"):
        ConceptModelParams(**IMAGES).build_encoder(700)  # type: ignore[arg-type]


def test_an_unknown_backbone_or_one_that_cannot_take_the_shape_is_one_line_naming_it() -> None:
    with pytest.raises(ConfigError, match=r"model\.backbone: .*'cnnn'.*did you mean 'cnn'"):
        ConceptModelParams(backbone="cnnn").build_encoder(12)
    with pytest.raises(ConfigError, match=r"model\.backbone: cnn cannot be built for inputs of shape \(12,\)"):
        ConceptModelParams(backbone="cnn").build_encoder(12)


def test_a_backbone_and_a_factory_together_are_refused() -> None:
    with pytest.raises(ValidationError, match="backbone and factory are exclusive"):
        ConceptModelParams(backbone="cnn", factory="mynets:encoder")


def test_a_factory_given_an_input_shape_receives_the_rows_as_examples_of_that_shape(tmp_path: Path) -> None:
    # Prepare: an encoder that records the shape it is built for and the batches it sees
    (tmp_path / "encoders.py").write_text(
        "from torch import nn\n"
        "SEEN = []\n"
        "class Recorder(nn.Module):\n"
        "    def forward(self, x):\n"
        "        SEEN.append(tuple(x.shape))\n"
        "        return x\n"
        "def encoder(input_shape, output_dim):\n"
        "    SEEN.append(('built', tuple(input_shape)))\n"
        "    return nn.Sequential(Recorder(), nn.Flatten(), nn.Linear(48, output_dim))\n",
        encoding="utf-8",
    )
    params = ConceptModelParams(factory=f"{tmp_path / 'encoders.py'}:encoder", input_shape=[3, 4, 4])

    # Execute
    encoder = params.build_encoder(48)
    features = encoder(torch.zeros(5, 48))

    # Assert: built for (3, 4, 4), fed (batch, 3, 4, 4)
    seen = encoder[1][0].forward.__globals__["SEEN"]
    assert seen[0] == ("built", (3, 4, 4))
    assert seen[-1] == (5, 3, 4, 4)
    assert features.shape == (5, 64)
