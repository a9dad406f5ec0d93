"""The model input of a concept dataset: one-hot concepts, autoencoded, mixed with noise, on unit scale."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import torch
from torch import nn

from fedmosaic.seeding import derive_rng, derive_seed
from fedmosaic.threads import torch_threads

AUTOENCODER_HIDDEN = 128


AUTOENCODER_EPOCHS = 5


AUTOENCODER_MIN_STEPS = 300


AUTOENCODER_BATCH = 256


AUTOENCODER_LR = 0.01


def one_hot_inputs(
    concepts: np.ndarray, names: Sequence[str], cardinalities: Mapping[str, int], inputs: Sequence[str]
) -> np.ndarray:
    """One-hot encode the ``inputs`` columns of integer-coded concepts, side by side.

    Parameters
    ----------
    concepts : np.ndarray
        int64 codes, shape ``(n, len(names))``.
    names : Sequence[str]
        Column names of ``concepts``.
    cardinalities : Mapping[str, int]
        Number of states of each concept.
    inputs : Sequence[str]
        The concepts to encode, in output order; other columns are ignored.

    Returns
    -------
    np.ndarray
        float32, shape ``(n, sum of the inputs' cardinalities)``.

    Examples
    --------
    >>> import numpy as np
    >>> one_hot_inputs(np.array([[1, 0], [0, 1]]), ["a", "b"], {"a": 2, "b": 3}, ["b"]).tolist()
    [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
    """
    blocks = [np.eye(cardinalities[name], dtype=np.float32)[concepts[:, list(names).index(name)]] for name in inputs]
    return np.concatenate(blocks, axis=1) if blocks else np.zeros((len(concepts), 0), np.float32)


class _Autoencoder(nn.Module):
    """MLP autoencoder; the decoder gives one block of logits per concept."""

    def __init__(self, width: int, latent_dim: int) -> None:
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Linear(width, AUTOENCODER_HIDDEN),
            nn.LeakyReLU(),
            nn.Linear(AUTOENCODER_HIDDEN, latent_dim),
        )
        self.decoder = nn.Sequential(
            nn.Linear(latent_dim, AUTOENCODER_HIDDEN),
            nn.LeakyReLU(),
            nn.Linear(AUTOENCODER_HIDDEN, width),
        )

    def forward(self, one_hot: torch.Tensor) -> torch.Tensor:
        """The one-hot input reconstructed through the latent code."""
        reconstruction: torch.Tensor = self.decoder(self.encoder(one_hot))
        return reconstruction


def autoencoded_inputs(
    codes: Mapping[str, np.ndarray],
    names: Sequence[str],
    cardinalities: Mapping[str, int],
    inputs: Sequence[str],
    latent_dim: int,
    epochs: int,
    seed: int,
    noise_share: float,
) -> dict[str, np.ndarray]:
    """``x`` of every split: unit-scale latents of an autoencoder fitted on the train split, mixed with noise, standardised."""
    one_hots = {split: one_hot_inputs(values, names, cardinalities, inputs) for split, values in codes.items()}
    train_codes = codes["train"][:, [list(names).index(node) for node in inputs]]
    widths = [cardinalities[node] for node in inputs]
    with torch_threads(1):
        encoder = _train_autoencoder(one_hots["train"], train_codes, widths, latent_dim, epochs, seed)
        latents = {split: _latent(encoder, one_hot) for split, one_hot in one_hots.items()}
    unit = standardised(latents, "train")
    noisy = {
        split: mix_noise(values, noise_share, derive_rng(seed, "bayesnet", "noise", split))
        for split, values in unit.items()
    }
    return {split: values.astype(np.float32) for split, values in standardised(noisy, "train").items()}


def standardised(values: Mapping[str, np.ndarray], reference: str) -> dict[str, np.ndarray]:
    """Every split minus the ``reference`` split's per-column mean, over its standard deviation.

    A constant column is only centred.

    Examples
    --------
    >>> import numpy as np
    >>> out = standardised({"train": np.array([[1.0, 5.0], [3.0, 5.0]]), "test": np.array([[5.0, 6.0]])}, "train")
    >>> out["train"].tolist(), out["test"].tolist()
    ([[-1.0, 0.0], [1.0, 0.0]], [[3.0, 1.0]])
    """
    mean, std = values[reference].mean(axis=0), values[reference].std(axis=0)
    std = np.where(std == 0, 1.0, std)
    return {split: (array - mean) / std for split, array in values.items()}


def mix_noise(latent: np.ndarray, noise_share: float, rng: np.random.Generator) -> np.ndarray:
    """``(1 - noise_share) * latent + noise_share * N(0, 1)``, the noise drawn from ``rng``.

    Examples
    --------
    >>> import numpy as np
    >>> mix_noise(np.ones((1, 2)), 0.0, np.random.default_rng(0)).tolist()
    [[1.0, 1.0]]
    """
    return (1.0 - noise_share) * latent + noise_share * rng.standard_normal(latent.shape)


def _train_autoencoder(
    one_hot: np.ndarray,
    codes: np.ndarray,
    cardinalities: Sequence[int],
    latent_dim: int,
    epochs: int,
    seed: int,
) -> nn.Module:
    """Fit the autoencoder (cross-entropy per concept) and return its encoder.

    ``codes`` are the integer codes one-hot encoded in ``one_hot``. PyTorch's
    global generator is left untouched (initialisation draws in a forked state).
    """
    inputs, targets = torch.from_numpy(one_hot), torch.from_numpy(codes)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(derive_seed(seed, "bayesnet", "autoencoder", "init"))
        model = _Autoencoder(one_hot.shape[1], latent_dim)
    optimizer = torch.optim.Adam(model.parameters(), lr=AUTOENCODER_LR)
    order = torch.Generator().manual_seed(derive_seed(seed, "bayesnet", "autoencoder", "order"))
    for _ in range(epochs):
        for batch in torch.randperm(len(inputs), generator=order).split(AUTOENCODER_BATCH):
            blocks = model(inputs[batch]).split(list(cardinalities), dim=1)
            loss = sum(nn.functional.cross_entropy(block, targets[batch, j]) for j, block in enumerate(blocks))
            assert isinstance(loss, torch.Tensor)  # one term per concept, never none
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    return model.encoder.eval()


def _latent(encoder: nn.Module, one_hot: np.ndarray) -> np.ndarray:
    with torch.no_grad():
        latent: np.ndarray = encoder(torch.from_numpy(one_hot)).numpy().astype(np.float64)
    return latent
