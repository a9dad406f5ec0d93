"""A method's own input encoder (``runs.N.params.model.factory``), built once on the data before any run."""

from __future__ import annotations

import torch

from fedmosaic.errors import ConfigError
from fedmosaic.experiments.config import ExperimentConfig, method_params


def check_run_encoders(config: ExperimentConfig, input_dim: int) -> None:
    """Build each run's own input encoder (``params.model.factory``) once on ``input_dim`` features, before any run.

    The global random state is left as it was.

    Raises
    ------
    ConfigError
        Naming ``runs.N.params.model.factory``, if it cannot be built or maps
        a batch to another shape than ``(batch, encoder_hidden)``.
    """
    for index, run in enumerate(config.runs):
        model = run.params.get("model")
        if not isinstance(model, dict) or model.get("factory") is None:
            continue
        params = method_params(config, index).model  # type: ignore[attr-defined]
        try:
            with torch.random.fork_rng():
                params.build_encoder(input_dim)
        except ConfigError as error:
            raise ConfigError(f"runs.{index}.params.{error.field}", error.message) from None
