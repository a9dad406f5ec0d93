"""Local training hyper-parameters (``[train]``), validated without PyTorch; :mod:`~fedmosaic.methods.training` trains by them."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from fedmosaic.limits import MAX_EPOCHS, MAX_LR, MAX_NOISE, MAX_NORM, BatchSize, Epochs


class TrainParams(BaseModel):
    """Local training hyper-parameters.

    Parameters
    ----------
    epochs : int, default 1
        Local epochs per round.
    batch_size : int, default 32
        Mini-batch size.
    optimizer : {"sgd", "adam"}, default "sgd"
        Optimizer, created afresh at the start of each round.
    optimizer_state : {"fresh", "kept"} or None, default None
        ``fresh`` starts every round's optimizer from nothing; ``kept``:
        each client keeps its optimizer's state (Adam's moments, SGD's
        momentum) from one round to the next in its client state, by
        parameter name, so it survives a checkpoint, ``--resume`` and a
        Flower deployment. Only methods that declare it take ``kept``.
        Unset: the method's own regime, ``kept`` for F-CMs (its training
        regime in docs/methods/fcm.md), ``fresh`` for every other method.
    lr : float, default 0.05
        Learning rate (> 0).
    momentum : float, default 0.0
        SGD momentum, in [0, 1).
    weight_decay : float, default 0.0
        L2 penalty (>= 0).
    pretrain_epochs : int, default 0
        Epochs of central training of the initial model on the workload's
        pretraining sample before round 1 (Simpson-MNIST); 0 for none.
    dp_noise_multiplier : float, default 0.0
        Local DP-SGD through Opacus: each example's gradient is clipped to
        ``dp_max_grad_norm`` and Gaussian noise of this many times that
        bound is added to each batch's sum; 0 trains without it, otherwise
        from 0.01 to 1000. The loss
        must be a mean over examples of per-example terms (FedProx's
        proximal term is not; it is rejected with DP-SGD).
    dp_max_grad_norm : float, default 1.0
        DP-SGD's bound on each example's gradient norm.
    dp_delta : float, default 1e-5
        The delta of the (epsilon, delta) each DP-SGD client reports.
    device : str, default "cpu"
        Where the clients and the server train and evaluate: ``cpu``,
        ``cuda`` (``cuda:N`` for the N-th GPU), ``mps`` (Apple's GPUs), or
        ``auto``: CUDA when PyTorch finds it, else the CPU. A device the
        machine lacks is refused when the run starts (``--device`` on
        ``fedmosaic run`` and ``deploy`` sets it). Messages stay NumPy arrays, so
        parties on different devices work together. The CPU is the default
        so that a configuration gives the same numbers on every machine (a
        GPU's kernels round differently).
    """

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

    epochs: Epochs = 1
    batch_size: BatchSize = 32
    optimizer: Literal["sgd", "adam"] = "sgd"
    optimizer_state: Literal["fresh", "kept"] | None = None
    lr: float = Field(default=0.05, gt=0, le=MAX_LR)
    momentum: float = Field(default=0.0, ge=0, lt=1)
    weight_decay: float = Field(default=0.0, ge=0, le=MAX_LR)
    pretrain_epochs: int = Field(default=0, ge=0, le=MAX_EPOCHS)
    dp_noise_multiplier: float = Field(default=0.0, ge=0, le=MAX_NOISE)
    dp_max_grad_norm: float = Field(default=1.0, gt=0, le=MAX_NORM)
    dp_delta: float = Field(default=1e-5, gt=0, lt=1)
    device: str = "cpu"
