"""ResNet-18, CIFAR variant: the published architecture, and FedCFA's cut after layer1."""

from __future__ import annotations

import numpy as np
import torch

from fedmosaic.data.arrays import ArrayDataset
from fedmosaic.federation import Federation, InProcessGrid, Schedule
from fedmosaic.methods.horizontal.fedcfa.build import build_fedcfa
from fedmosaic.methods.horizontal.fedcfa.params import FedCFAParams
from fedmosaic.methods.horizontal.fedcfa.split import default_split, split_model
from fedmosaic.methods.horizontal.models import ModelParams, build_model
from fedmosaic.methods.horizontal.task import HorizontalTask
from fedmosaic.methods.train_params import TrainParams


def test_it_has_the_published_cifar_resnet18_s_parameters_and_feature_maps() -> None:
    # Prepare
    model = build_model(ModelParams(kind="resnet18"), (3, 32, 32), 10).eval()
    x = torch.zeros(2, 3, 32, 32)

    # Execute: the output of the stem and of each stage
    shapes = []
    with torch.no_grad():
        for layer in list(model)[:5]:
            x = layer(x)
            shapes.append(tuple(x.shape[1:]))
        logits = model(torch.zeros(2, 3, 32, 32))

    # Assert: 11,173,962 parameters for 10 classes (He et al.'s ResNet-18 with the CIFAR stem)
    assert sum(p.numel() for p in model.parameters()) == 11_173_962
    assert shapes == [(64, 32, 32), (64, 32, 32), (128, 16, 16), (256, 8, 8), (512, 4, 4)]
    assert logits.shape == (2, 10)
    assert sum(p.numel() for p in build_model(ModelParams(kind="resnet18"), (3, 32, 32), 100).parameters()) == (
        11_173_962 + 90 * 513
    )


def test_fedcfa_cuts_it_after_layer1_with_its_64_channels_as_factors() -> None:
    # Prepare
    model = build_model(ModelParams(kind="resnet18"), (3, 32, 32), 10).eval()

    # Execute
    encoder, decoder = split_model(model, default_split(model))
    with torch.no_grad():
        factors = encoder(torch.zeros(1, 3, 32, 32))

    # Assert: the encoder is the stem and layer1, as the reference's ResNetHook2
    assert len(encoder) == 2
    assert factors.shape == (1, 64, 32, 32)
    assert decoder(factors).shape == (1, 10)


def test_fedcfa_runs_two_rounds_on_it_over_32x32_colour_images() -> None:
    # Prepare: two clients of four random 32x32 colour images of two classes
    rng = np.random.default_rng(0)

    def images(n: int) -> ArrayDataset:
        return ArrayDataset(rng.random((n, 3, 32, 32), dtype=np.float32), rng.integers(0, 2, n), num_classes=2)

    task = HorizontalTask([images(4), images(4)], images(2), ModelParams(kind="resnet18"), TrainParams(batch_size=4))
    server, clients = build_fedcfa(task, FedCFAParams(k=8))

    # Execute
    history = Federation(server, InProcessGrid(clients, 0), Schedule(num_clients=2), seed=0, rounds=2).run()

    # Assert
    assert [record.status for record in history] == ["ok", "ok"]
    assert all(np.isfinite(record.metrics["loss"]) for record in history)
