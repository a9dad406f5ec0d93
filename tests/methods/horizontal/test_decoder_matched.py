"""FedAvg with FedCFA's decoder step: the decoder moves decoder_scale times as far, the encoder as FedAvg's."""

import numpy as np
import pytest
import torch

from fedmosaic.data.arrays import ArrayDataset
from fedmosaic.federation import ClientContext, ClientState, Message
from fedmosaic.methods.arrays import model_to_arrays
from fedmosaic.methods.horizontal.decoder_matched.client import DecoderMatchedClient
from fedmosaic.methods.horizontal.decoder_matched.params import DecoderMatchedParams
from fedmosaic.methods.horizontal.fedavg.client import FedAvgClient
from fedmosaic.methods.horizontal.models import ModelParams, build_model
from fedmosaic.methods.registry import get_method
from fedmosaic.methods.train_params import TrainParams


def _factory():
    torch.manual_seed(0)  # the same start whichever tests ran before in this process
    return build_model(ModelParams(hidden=[4]), (3,), 2)


def _data() -> ArrayDataset:
    rng = np.random.default_rng(0)
    return ArrayDataset(rng.standard_normal((8, 3)).astype(np.float32), np.array([0, 1] * 4), num_classes=2)


def test_one_plain_sgd_step_moves_the_decoder_scale_times_as_far_and_the_encoder_as_fedavg() -> None:
    # Prepare: one batch, one epoch, plain SGD; the MLP's decoder is its last linear layer ("3.")
    train = TrainParams(epochs=1, batch_size=8, lr=0.1)
    start = model_to_arrays(_factory())
    message, context = Message(arrays=start), ClientContext(0, 1, seed=1)
    # Execute
    plain = FedAvgClient(_factory, _data(), train).handle(message, ClientState(), context)
    matched = DecoderMatchedClient(_factory, _data(), train, DecoderMatchedParams(decoder_scale=11.0)).handle(
        message, ClientState(), context
    )
    # Assert
    for name in start:
        step_plain, step_matched = plain.arrays[name] - start[name], matched.arrays[name] - start[name]
        factor = 11.0 if name.startswith("3.") else 1.0
        # each step is a float32 difference, exact to half a unit in the last place of the weights it moved
        rounding = (factor + 1.0) * float(np.spacing(np.abs(start[name]).max()))
        np.testing.assert_allclose(step_matched, factor * step_plain, rtol=1e-4, atol=rounding)


def test_it_is_registered_and_refuses_a_non_positive_scale() -> None:
    # Execute
    method = get_method("fedavg-decoder-matched")
    # Assert
    assert method.params is DecoderMatchedParams
    assert DecoderMatchedParams().decoder_scale == 11.0
    with pytest.raises(ValueError, match="decoder_scale"):
        DecoderMatchedParams(decoder_scale=0.0)
