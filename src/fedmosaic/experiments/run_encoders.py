"""The user's own model parts of each run (``runs.N.params.model.factory``), built once on the data before any run."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from fedmosaic.errors import ConfigError
from fedmosaic.experiments.config import ExperimentConfig, method_params


def check_own_models(config: ExperimentConfig, widths: Sequence[int]) -> None:
    """Have each run's method build its own model parts once, on parties of ``widths`` features (one for a single input).

    The global random state is left as it was.

    Raises
    ------
    ConfigError
        Naming ``runs.N.params.model.factory``, if a part cannot be built or
        maps a batch to another shape than the method needs.
    """
    for index in range(len(config.runs)):
        try:
            with torch.random.fork_rng():
                method_params(config, index).check_own_model(widths)
        except ConfigError as error:
            raise ConfigError(f"runs.{index}.params.{error.field}", error.message) from None
