"""ResNet-18, the CIFAR variant (3x3 stem, no max-pooling), as FedCFA's reference cuts it after ``layer1``.

He et al.'s ResNet-18 with the CIFAR stem: a 3x3 convolution of 64 channels,
batch norm and ReLU, then four stages of two basic blocks (64, 128, 256 and
512 channels; the last three halve the resolution), global average pooling
(the reference's 4x4 window over 32x32 inputs' last 4x4 maps) and a linear
layer: 11,173,962 parameters for 10 classes. It is built as an
``nn.Sequential`` whose ``encoder_end`` is 2, so that FedCFA's encoder is the
stem and ``layer1`` (the factors are ``layer1``'s 64 channels) and its decoder
the rest, as the reference code's ``ResNetHook2`` splits it
(``hua-zi/FedCFA``, ``fedlab/models/resnet.py``).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

STAGES = (64, 128, 256, 512)
"""Channels of the four stages."""
BLOCKS_PER_STAGE = 2
ENCODER_END = 2
"""Index of the decoder's first layer: the stem (0) and ``layer1`` (1) are FedCFA's encoder."""


class BasicBlock(nn.Module):
    """Two 3x3 convolutions with batch norm, added to the input (through a 1x1 projection where the shape changes).

    Examples
    --------
    >>> BasicBlock(64, 128, stride=2)(torch.zeros(1, 64, 8, 8)).shape
    torch.Size([1, 128, 4, 4])
    """

    def __init__(self, inputs: int, outputs: int, stride: int = 1) -> None:
        super().__init__()
        self.residual = nn.Sequential(
            nn.Conv2d(inputs, outputs, kernel_size=3, stride=stride, padding=1, bias=False),
            nn.BatchNorm2d(outputs),
            nn.ReLU(inplace=True),
            nn.Conv2d(outputs, outputs, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(outputs),
        )
        reshapes = stride != 1 or inputs != outputs
        self.shortcut = (
            nn.Sequential(nn.Conv2d(inputs, outputs, kernel_size=1, stride=stride, bias=False), nn.BatchNorm2d(outputs))
            if reshapes
            else nn.Identity()
        )

    def forward(self, x: Tensor) -> Tensor:
        """ReLU of the residual branch plus the shortcut."""
        return torch.relu(self.residual(x) + self.shortcut(x))


class ResNet18(nn.Sequential):
    """ResNet-18's layers in order, declaring where FedCFA's encoder ends (:data:`ENCODER_END`)."""

    encoder_end = ENCODER_END


def resnet18(input_shape: tuple[int, ...], num_classes: int) -> ResNet18:
    """ResNet-18 (CIFAR variant) for images of ``input_shape`` ``(channels, height, width)``.

    Examples
    --------
    >>> model = resnet18((3, 32, 32), 10)
    >>> sum(p.numel() for p in model.parameters()), model.encoder_end
    (11173962, 2)
    """
    if len(input_shape) != 3:
        raise ValueError(f"model.kind 'resnet18' needs image inputs (C, H, W), got shape {input_shape}")
    stem = nn.Sequential(
        nn.Conv2d(input_shape[0], STAGES[0], kernel_size=3, padding=1, bias=False),
        nn.BatchNorm2d(STAGES[0]),
        nn.ReLU(inplace=True),
    )
    stages, width = [], STAGES[0]
    for index, channels in enumerate(STAGES):
        blocks = [
            BasicBlock(width if k == 0 else channels, channels, 1 if index == 0 or k else 2)
            for k in range(BLOCKS_PER_STAGE)
        ]
        stages.append(nn.Sequential(*blocks))
        width = channels
    return ResNet18(stem, *stages, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(STAGES[-1], num_classes))
