"""Model architectures by name: fedmosaic's own and installed plugins', through one registry.

A :class:`ModelArchitecture` builds a classifier for a task: it is called
with the shape of one example and the number of classes, and the keyword
arguments the experiment gives (``[model]``). fedmosaic's own (``mlp``,
``cnn``) are registered through its ``fedmosaic.models`` entry point, as a
plugin's are; ``[model] kind`` names one, ``[model] factory`` names a
user's own callable of the same signature instead.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from fedmosaic.errors import ConfigError
from fedmosaic.registry import Registry
from fedmosaic.user_code import load_callable

if TYPE_CHECKING:
    from torch import nn


@dataclass(frozen=True)
class ModelArchitecture:
    """A registered model architecture.

    Parameters
    ----------
    name : str
        Name used as ``[model] kind``.
    summary : str
        One line for listings.
    build : callable (input_shape, num_classes, **arguments) -> torch.nn.Module
        Builds a fresh model whose output is ``(batch, num_classes)`` logits.
    keys : tuple of str, default ()
        ``[model]`` keys passed to ``build`` as keyword arguments (the
        built-ins' ``hidden`` and ``channels``); ``[model] args`` adds others.
    """

    name: str
    summary: str
    build: Callable[..., nn.Module]
    keys: tuple[str, ...] = ()


MODELS: Registry[ModelArchitecture] = Registry(
    "model", "fedmosaic.models", ModelArchitecture, builtin="fedmosaic.methods.horizontal.models:BUILTIN_MODELS"
)
"""Every registered architecture, by name: fedmosaic's first, then each plugin's."""


class OwnModel(BaseModel):
    """A model part of your own, built by a factory (``runs.N.params.model`` of a method that takes one).

    Parameters
    ----------
    factory : str
        ``"module:callable"`` (a module beside the experiment file, or
        installed) or ``"file.py:callable"``; what it is called with is the
        method's (its parameters' documentation says).
    args : table or None, default None
        Further keyword arguments of the factory.
    code_sha256 : str or None, default None
        Set when the configuration loads: the SHA-256 of the factory's
        module source, recorded with every run and model file.
    """

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

    factory: str = Field(min_length=1)
    args: dict[str, Any] | None = None
    code_sha256: str | None = Field(default=None, min_length=64, max_length=64)

    def build(self, example: tuple[int, ...], output_dim: int, **inputs: Any) -> nn.Module:
        """Call the factory with ``input_shape=example``, ``output_dim``, ``inputs`` and ``args``, and check its module.

        Raises
        ------
        ConfigError
            Naming ``model.factory``: it cannot be imported or called, or does not map a
            batch of ``example`` inputs to ``(batch, output_dim)``.
        """
        import torch
        from torch import nn

        build = load_callable(self.factory, "model.factory")
        try:
            module = build(input_shape=example, output_dim=output_dim, **inputs, **(self.args or {}))
            with torch.no_grad(), torch.random.fork_rng():
                shape = tuple(module(torch.zeros(2, *example)).shape) if isinstance(module, nn.Module) else ()
        except Exception as error:  # noqa: BLE001 - the user's code: whatever it raises is reported on one line
            detail = str(error).splitlines()[0] if str(error) else ""
            raise ConfigError(
                "model.factory",
                f"{self.factory} cannot be built for {example} inputs: {type(error).__name__}: {detail}",
            ) from None
        if not isinstance(module, nn.Module) or shape != (2, output_dim):
            raise ConfigError(
                "model.factory",
                f"{self.factory} must return a torch.nn.Module of (batch, {output_dim}) outputs, "
                f"got {type(module).__name__} of {shape} for a batch of 2",
            )
        built: nn.Module = module
        return built

    def build_on_block(self, shape: tuple[int, ...], output_dim: int, **inputs: Any) -> nn.Module:
        """:meth:`build` for examples of ``shape``, taking them flattened: a party's block of ``prod(shape)`` columns.

        Vertical methods pass every block flat; a party whose columns are an
        image (``shape`` of more than one dimension) gets them back in that
        shape before the factory's module.
        """
        from torch import nn

        module = self.build(shape, output_dim, **inputs)
        return nn.Sequential(nn.Unflatten(1, shape), module) if len(shape) > 1 else module


def own_model_entries(**parts: OwnModel | None) -> dict[str, dict[str, Any]]:
    """A model card's entries of a method's own model parts (``model``, ``head``): what :func:`fedmosaic.load_model` trusts or refuses.

    Examples
    --------
    >>> own_model_entries(model=OwnModel(factory="nets:encoder"), head=None)
    {'model': {'factory': 'nets:encoder'}}
    """
    return {key: part.model_dump(mode="json", exclude_none=True) for key, part in parts.items() if part is not None}
