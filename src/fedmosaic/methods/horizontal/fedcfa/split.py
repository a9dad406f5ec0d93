"""Cutting a sequential classifier into an encoder (input -> factors) and a decoder (factors -> logits)."""

from __future__ import annotations

from typing import cast

from torch import nn

#: Modules that end a hidden layer of an MLP.
ACTIVATIONS: tuple[type[nn.Module], ...] = (
    nn.ReLU,
    nn.LeakyReLU,
    nn.ELU,
    nn.GELU,
    nn.SiLU,
    nn.Tanh,
    nn.Sigmoid,
)
#: Modules that end a convolution block.
POOLING: tuple[type[nn.Module], ...] = (nn.MaxPool2d, nn.AvgPool2d)


def default_split(model: nn.Sequential) -> int:
    """The default cut of ``model``.

    A model that declares where its encoder ends (an ``encoder_end``
    attribute, the index of the decoder's first layer, as the built-in
    ResNet-18 does) is cut there.
    A convolutional model (layers before its first ``Flatten``) is cut just
    after its first convolution block (the convolution, its activation and
    a pooling layer that follows), as the reference cuts ResNet-18 after
    ``layer1``: the factors are the channels of that block's feature map and
    the decoder keeps the other blocks and the classifier. Otherwise (an
    MLP, ``Flatten`` first or absent) it is cut just after the first
    activation: the factors are the first hidden layer's units.

    Raises
    ------
    ValueError
        If neither rule finds a cut inside the model.

    Examples
    --------
    >>> from torch import nn
    >>> default_split(nn.Sequential(nn.Flatten(), nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2)))
    3
    >>> default_split(nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU(), nn.Flatten(), nn.Linear(8, 2)))
    2
    >>> default_split(nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU(), nn.MaxPool2d(2),
    ...                             nn.Conv2d(2, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(4, 2)))
    3
    """
    declared = getattr(model, "encoder_end", None)
    if isinstance(declared, int) and not isinstance(declared, bool):
        return declared
    layers = list(model)
    flatten = next((i for i, m in enumerate(layers) if isinstance(m, nn.Flatten)), None)
    if flatten is not None and flatten > 0:
        return _after_first_block(layers[:flatten])
    activation = next((i for i, m in enumerate(layers) if isinstance(m, ACTIVATIONS)), None)
    if activation is None or activation + 1 >= len(layers):
        raise ValueError(
            "FedCFA cannot find a default split: the model has no convolution blocks before a Flatten "
            "and no hidden layer; set split"
        )
    return activation + 1


def _after_first_block(features: list[nn.Module]) -> int:
    """Index just after the first activation of ``features`` and the pooling layers that follow it."""
    cut = next((i + 1 for i, m in enumerate(features) if isinstance(m, ACTIVATIONS)), len(features))
    while cut < len(features) and isinstance(features[cut], POOLING):
        cut += 1
    return cut


def split_model(model: nn.Module, split: int | None = None) -> tuple[nn.Sequential, nn.Sequential]:
    """The encoder ``model[:split]`` and the decoder ``model[split:]``.

    Both share their modules (and parameters) with ``model``; slicing keeps
    the parameter names relative to the slice.

    Parameters
    ----------
    model : torch.nn.Sequential
        The classifier.
    split : int or None, default None
        Index of the decoder's first layer, in ``[1, len(model) - 1]``;
        ``None`` uses :func:`default_split`.

    Returns
    -------
    (torch.nn.Sequential, torch.nn.Sequential)
        Encoder and decoder; ``decoder(encoder(x)) == model(x)``.

    Raises
    ------
    TypeError
        If ``model`` is not an ``nn.Sequential``.
    ValueError
        If ``split`` leaves the encoder or the decoder empty.

    Examples
    --------
    >>> from torch import nn
    >>> model = nn.Sequential(nn.Flatten(), nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    >>> encoder, decoder = split_model(model)
    >>> len(encoder), len(decoder)
    (3, 1)
    >>> decoder[0] is model[3]
    True
    """
    if not isinstance(model, nn.Sequential):
        raise TypeError(f"FedCFA needs an nn.Sequential model, got {type(model).__name__}")
    cut = default_split(model) if split is None else split
    if not 1 <= cut <= len(model) - 1:
        raise ValueError(f"split must be in [1, {len(model) - 1}] for this model, got {cut}")
    # A slice of a Sequential is a Sequential (torch annotates __getitem__ without the overload saying so).
    return cast(nn.Sequential, model[:cut]), cast(nn.Sequential, model[cut:])
