"""Turn pydantic validation errors into one-line messages naming the field."""

from __future__ import annotations

import difflib
import types
import typing
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from fedmosaic.errors import ConfigError


def validate(model: type[BaseModel], data: Any, *, prefix: str = "") -> BaseModel:
    """Validate ``data`` against ``model``, raising a one-line :class:`ConfigError`.

    Parameters
    ----------
    model : type of pydantic.BaseModel
        The schema.
    data : Any
        Raw values (e.g. parsed TOML).
    prefix : str, default ""
        Dotted path of ``data`` inside the whole configuration.

    Raises
    ------
    ConfigError
        For the first error: the field's dotted path and what is accepted;
        an unknown key comes with a did-you-mean and the accepted keys.

    Examples
    --------
    >>> from pydantic import BaseModel, ConfigDict
    >>> class P(BaseModel):
    ...     model_config = ConfigDict(extra="forbid")
    ...     alpha: float = 1.0
    >>> try:
    ...     validate(P, {"alpah": 2}, prefix="partition")
    ... except ConfigError as e:
    ...     print(e)
    partition.alpah: unknown key; did you mean 'alpha'? (accepted: alpha)
    """
    try:
        return model.model_validate(data)
    except ValidationError as error:
        first = error.errors(include_url=False)[0]
        raise _to_config_error(model, first, prefix) from None


def _to_config_error(model: type[BaseModel], error: ErrorDetails, prefix: str) -> ConfigError:
    loc: Sequence[str | int] = list(error["loc"])
    field = ".".join(str(part) for part in ([prefix] if prefix else []) + list(loc))
    if error["type"] == "extra_forbidden":
        accepted = _fields_at(model, loc[:-1])
        close = difflib.get_close_matches(str(loc[-1]), accepted, n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        return ConfigError(field, f"unknown key{hint} (accepted: {', '.join(accepted)})")
    message = error["msg"].removeprefix("Value error, ")  # a validator's own sentence, without pydantic's label
    if error["type"] != "missing":
        message += f" (got {error['input']!r})"
    return ConfigError(field, message[0].lower() + message[1:])


def _fields_at(model: type[BaseModel], loc: Sequence[str | int]) -> list[str]:
    current: Any = model
    for part in loc:
        if isinstance(part, int):
            current = _element_type(current)
            continue
        if not (isinstance(current, type) and issubclass(current, BaseModel)):
            return []
        current = current.model_fields[part].annotation
        current = _model_in(current)
    current = _model_in(current)
    if isinstance(current, type) and issubclass(current, BaseModel):
        return sorted(current.model_fields)
    return []


def _model_in(annotation: Any) -> Any:
    """The BaseModel inside ``Optional[...]`` or a plain annotation."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        for arg in typing.get_args(annotation):
            if isinstance(arg, type) and issubclass(arg, BaseModel):
                return arg
    return annotation


def _element_type(annotation: Any) -> Any:
    args = typing.get_args(annotation)
    return _model_in(args[-1]) if args else annotation
