"""The model input of a concept dataset: concepts autoencoded and mixed with noise.

Two constructions: fedmosaic's (:func:`autoencoded_inputs`: one-hot concepts,
an autoencoder fitted on the train split, its latent put on unit scale
before the noise is mixed in) and the F-CMs reference code's
(:func:`reference_inputs`: raw integer codes, an MSE autoencoder fitted on
every split, the noise mixed into the raw latent).
"""

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


REFERENCE_LR = 5e-4
"""The reference autoencoder's learning rate (Adam)."""

REFERENCE_BATCH = 512
"""The reference autoencoder's batch (taken in order, unshuffled)."""

REFERENCE_MAX_EPOCHS = 300
"""Epochs at most of the reference autoencoder (the reference: 2,000; bounded here to keep a run affordable)."""

REFERENCE_PATIENCE = 50
"""Epochs without a lower training loss after which the reference autoencoder stops."""

REFERENCE_NEGATIVE_SLOPE = 0.1
"""Slope of the LeakyReLU that ends the reference encoder."""


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


class _ReferenceAutoencoder(nn.Module):
    """The reference code's autoencoder: raw codes in, raw codes out, a LeakyReLU(0.1) latent."""

    def __init__(self, width: int, latent_dim: int) -> None:
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Linear(width, latent_dim),
            nn.ReLU(),
            nn.Linear(latent_dim, latent_dim),
            nn.LeakyReLU(REFERENCE_NEGATIVE_SLOPE),
        )
        self.decoder = nn.Sequential(nn.Linear(latent_dim, latent_dim), nn.ReLU(), nn.Linear(latent_dim, width))

    def forward(self, codes: torch.Tensor) -> torch.Tensor:
        """The codes reconstructed through the latent."""
        reconstruction: torch.Tensor = self.decoder(self.encoder(codes))
        return reconstruction


def reference_inputs(
    codes: Mapping[str, np.ndarray],
    names: Sequence[str],
    inputs: Sequence[str],
    latent_dim: int,
    seed: int,
    noise_share: float,
    max_epochs: int = REFERENCE_MAX_EPOCHS,
) -> tuple[dict[str, np.ndarray], float]:
    """``x`` of every split built as the F-CMs reference code builds it, and the raw latent's scale.

    An autoencoder (Linear, ReLU, Linear, LeakyReLU(0.1) latent; mirror
    decoder) is fitted with MSE on the raw integer codes of ``inputs``,
    every split together, in unshuffled batches of 512 (Adam, lr 5e-4),
    stopping after 50 epochs without a lower training loss or at
    ``max_epochs``; its latent ``z`` is mixed with noise,
    ``(1 - noise_share) * z + noise_share * N(0, 1)``, and standardised with
    the train split's statistics.

    Parameters
    ----------
    codes : mapping of str to numpy.ndarray
        Integer codes of every split (``train``, ``val``, ``test``), columns in ``names`` order.
    names : sequence of str
        The columns of ``codes``.
    inputs : sequence of str
        The variables encoded.
    latent_dim : int
        Width of ``x``.
    seed : int
        Seed of the initialisation and of the noise.
    noise_share : float
        ``s``, mixed on the raw latent.
    max_epochs : int, default 300
        Bound on the autoencoder's epochs.

    Returns
    -------
    tuple of (dict of str to numpy.ndarray, float)
        ``x`` of each split (float32), and the raw latent's standard
        deviation on the train split (root mean square over its dimensions),
        which says what ``noise_share`` amounts to: on a unit-scale latent the
        same signal-to-noise ratio takes the share ``s / (s + (1 - s) * std)``.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> codes = {split: rng.integers(0, 3, (40, 4)) for split in ("train", "val", "test")}
    >>> x, scale = reference_inputs(codes, ["a", "b", "c", "d"], ["a", "b"], 3, seed=0, noise_share=0.5, max_epochs=2)
    >>> x["test"].shape, scale > 0
    ((40, 3), True)
    """
    columns = [list(names).index(node) for node in inputs]
    splits = list(codes)
    raw = {split: torch.from_numpy(codes[split][:, columns].astype(np.float32)) for split in splits}
    with torch_threads(1):
        encoder = _train_reference_autoencoder(
            torch.cat([raw[split] for split in splits]), latent_dim, seed, max_epochs
        )
        with torch.no_grad():
            latents = {split: encoder(values).numpy().astype(np.float64) for split, values in raw.items()}
    scale = float(np.sqrt(np.mean(latents["train"].var(axis=0))))
    noisy = {
        split: mix_noise(values, noise_share, derive_rng(seed, "bayesnet", "noise", split))
        for split, values in latents.items()
    }
    features = {split: values.astype(np.float32) for split, values in standardised(noisy, "train").items()}
    return features, scale


def _train_reference_autoencoder(data: torch.Tensor, latent_dim: int, seed: int, max_epochs: int) -> nn.Module:
    """Fit the reference autoencoder on ``data`` (MSE, unshuffled batches) and return its encoder."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(derive_seed(seed, "bayesnet", "reference-autoencoder", "init"))
        model = _ReferenceAutoencoder(data.shape[1], latent_dim)
    optimizer = torch.optim.Adam(model.parameters(), lr=REFERENCE_LR)
    best, waited = float("inf"), 0
    for _ in range(max_epochs):
        total = 0.0
        for batch in data.split(REFERENCE_BATCH):
            loss = nn.functional.mse_loss(model(batch), batch)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += float(loss.detach())
        best, waited = (total, 0) if total < best else (best, waited + 1)
        if waited >= REFERENCE_PATIENCE:
            break
    # The reference keeps the weights of the last epoch: the "best" state it saves is the live state dict.
    return model.encoder.eval()


def probe_accuracy(train_x: np.ndarray, train_y: np.ndarray, test_x: np.ndarray, test_y: np.ndarray) -> float:
    """Test accuracy of a logistic regression from ``x`` to the task fitted on the train split: what the inputs give away.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.array([[0.0], [1.0], [0.1], [0.9]]); y = np.array([0, 1, 0, 1])
    >>> probe_accuracy(x, y, x, y)
    1.0
    """
    from sklearn.linear_model import LogisticRegression  # imported on use: only the workload's summary needs it

    if len(np.unique(train_y)) < 2:
        return float(np.mean(test_y == train_y[0]))
    probe = LogisticRegression(max_iter=1000).fit(train_x, train_y)
    return float(np.mean(probe.predict(test_x) == test_y))


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
