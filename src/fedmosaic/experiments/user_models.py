"""A user's own model code in an experiment: checked when the configuration loads, and the source it runs hashed.

Factories are named in ``[model] factory`` (the classifier of a horizontal
task), ``runs.N.params.model.factory`` (a method's own model part, as F-CMs'
input encoder) and ``runs.N.params.head.factory`` (a vertical method's own
head). Each is imported and its signature checked
now; its module's SHA-256 is recorded in the configuration (``code_sha256``
beside it), so that every run, its ``config.toml``, ``results.json`` and
model cards name the code they ran, and a recorded configuration whose
source has changed is refused.
"""

from __future__ import annotations

from typing import Any

from fedmosaic.errors import ConfigError
from fedmosaic.methods.horizontal.models import check_signature
from fedmosaic.user_code import OWN_PARTS, check_accepts, load_callable, source_sha256

ExperimentConfig = Any
"""A validated :class:`~fedmosaic.experiments.config.ExperimentConfig` (not imported: it calls this module)."""


def with_model_code(config: ExperimentConfig) -> ExperimentConfig:
    """``config`` with its own models checked and, for each factory, the SHA-256 of the source it runs.

    Raises
    ------
    ConfigError
        Naming ``model.factory`` or ``model.kind``: an architecture that is not registered, a factory that cannot be imported or called with a
        shape, classes and ``args``; ``runs.N.params.model.factory`` likewise for a
        method's own model part; the ``code_sha256`` beside a factory if a
        recorded hash no longer matches the source.
    """
    model = config.model
    if config.task_kind != "classification":  # the model of other tasks is set in runs.N.params
        return config.model_copy(update={"runs": [_run_with_code(run, k) for k, run in enumerate(config.runs)]})
    check_signature(model)
    if model.factory is None:
        return config
    digest = _digest(model.factory, model.code_sha256, "model")
    return config.model_copy(update={"model": model.model_copy(update={"code_sha256": digest})})


def _run_with_code(run: Any, index: int) -> Any:
    """Run ``index`` with the hash of each factory its parameters name (:data:`OWN_PARTS`)."""
    params = dict(run.params)
    for key in OWN_PARTS:
        part = params.get(key)
        if not isinstance(part, dict) or not isinstance(part.get("factory"), str):
            continue
        factory = part["factory"]
        prefix = f"runs.{index}.params.{key}"
        build = load_callable(factory, f"{prefix}.factory")
        arguments = part.get("args") or {}
        inputs = {"input_shape": (1,), "output_dim": 1}  # the method may pass more (a vertical party's index)
        check_accepts(build, factory, f"{prefix}.factory", inputs, arguments, all_inputs=False)
        params[key] = {**part, "code_sha256": _digest(factory, part.get("code_sha256"), prefix)}
    return run.model_copy(update={"params": params}) if params != run.params else run


def _digest(factory: str, recorded: str | None, prefix: str) -> str:
    """The SHA-256 of ``factory``'s module source; refused if a recorded one differs."""
    digest = source_sha256(factory, f"{prefix}.factory")
    if recorded is not None and recorded != digest:
        raise ConfigError(
            f"{prefix}.code_sha256",
            f"the source of {factory} changed since this configuration was recorded "
            f"({recorded[:12]}..., now {digest[:12]}...)",
        )
    return digest
