"""Before any run, on the data: each run's own model parts built once, and the task's classifier checked by each run's method.

A factory that cannot build, or builds what a method cannot train, is then
refused on one line before anything is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from fedmosaic.errors import ConfigError
from fedmosaic.experiments.config import ExperimentConfig, method_params


def check_own_models(config: ExperimentConfig, shapes: Sequence[tuple[int, ...]], num_classes: int) -> None:
    """Have each run's method build its own model parts once, on parties whose examples have ``shapes`` (one for a single input), for ``num_classes`` classes.

    The global random state is left as it was.

    Raises
    ------
    ConfigError
        Naming ``runs.N.params.model.factory`` (or ``head.factory``), if a part cannot be built or
        maps a batch to another shape than the method needs.
    """
    for index in range(len(config.runs)):
        try:
            with torch.random.fork_rng():
                method_params(config, index).check_own_model(shapes, num_classes)
        except ConfigError as error:
            raise ConfigError(f"runs.{index}.params.{error.field}", error.message) from None


def check_run_classifiers(config: ExperimentConfig, model: Any) -> None:
    """Have each run's method check the task's classifier (``[model]``, built once): FedCFA cuts it, for one.

    Raises
    ------
    ConfigError
        Naming ``runs.N.method`` or ``runs.N.params.<field>``.
    """
    for index in range(len(config.runs)):
        try:
            method_params(config, index).check_model(model)
        except ConfigError as error:
            raise ConfigError(f"runs.{index}.{error.field}", error.message) from None
