"""Classifier architectures from a validated description."""

import pytest
import torch
from pydantic import ValidationError

from fedmosaic.errors import ConfigError
from fedmosaic.methods.horizontal.models import ModelParams, build_model, check_signature


@pytest.mark.parametrize(
    ("kind", "shape"), [("mlp", (1, 8, 8)), ("mlp", (617,)), ("cnn", (1, 28, 28)), ("cnn", (1, 8, 8))]
)
def test_models_map_a_batch_of_inputs_to_one_logit_per_class(kind: str, shape: tuple[int, ...]) -> None:
    model = build_model(ModelParams(kind=kind, hidden=[16], channels=[4, 8]), shape, 7)
    assert model(torch.zeros(5, *shape)).shape == (5, 7)


def test_mlp_has_the_documented_layer_sizes() -> None:
    model = build_model(ModelParams(hidden=[200, 200]), (1, 28, 28), 10)
    assert sum(p.numel() for p in model.parameters()) == 784 * 200 + 200 + 200 * 200 + 200 + 200 * 10 + 10


def test_cnn_needs_image_inputs() -> None:
    with pytest.raises(ValueError, match="image inputs"):
        build_model(ModelParams(kind="cnn"), (617,), 26)


def test_unknown_kinds_and_keys_are_rejected() -> None:
    with pytest.raises(
        ConfigError, match=r"^model\.kind: unknown model 'transformer' \(accepted: cnn, mlp, resnet18\)$"
    ):
        build_model(ModelParams(kind="transformer"), (3,), 2)
    with pytest.raises(ConfigError, match=r"^model\.kind: unknown model 'mpl'; did you mean 'mlp'\?"):
        check_signature(ModelParams(kind="mpl"))
    with pytest.raises(ValidationError):
        ModelParams.model_validate({"hiden": [3]})
