"""A raw configuration before validation: read from TOML, changed by ``--set`` overrides, expanded over a grid."""

from __future__ import annotations

import itertools
import json
import tomllib
from pathlib import Path
from typing import Any

from fedmosaic.errors import ConfigError


def read_toml(path: Path) -> dict[str, Any]:
    """Parse a TOML experiment file.

    Raises
    ------
    ConfigError
        If the file cannot be read, is not UTF-8 text or is not valid TOML.
    """
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise ConfigError("experiment", f"cannot read {path}: {error.strerror}") from None
    except UnicodeDecodeError as error:
        raise ConfigError("experiment", f"{path} is not UTF-8 text (byte {error.start}): not a TOML file") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError("experiment", f"{path} is not valid TOML: {error}") from None


def apply_overrides(source: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """Apply ``key=value`` overrides to a raw configuration.

    Keys are dotted paths (``partition.alpha``, ``runs.1.params.mu``); ``*``
    stands for every entry of a list (``runs.*.params.model.family``); values
    are TOML values (``5``, ``0.1``, ``true``, ``[1, 2]``), or bare strings.

    Examples
    --------
    >>> apply_overrides({"partition": {"alpha": 0.5}}, ["partition.alpha=0.1", "name=x"])
    {'partition': {'alpha': 0.1}, 'name': 'x'}
    >>> apply_overrides({"runs": [{"name": "a"}, {"name": "b"}]}, ["runs.*.setting=local"])["runs"]
    [{'name': 'a', 'setting': 'local'}, {'name': 'b', 'setting': 'local'}]
    """
    result: dict[str, Any] = json.loads(json.dumps(source))  # a deep copy
    for override in overrides:
        key, sep, text = override.partition("=")
        if not sep or not key.strip():
            raise ConfigError("--set", f"expected key=value, got {override!r}")
        set_path(result, key.strip().split("."), _parse_value(text.strip()), key.strip())
    return result


def _parse_value(text: str) -> Any:
    try:
        return tomllib.loads(f"value = {text}")["value"]
    except tomllib.TOMLDecodeError:
        return text


def set_path(node: Any, parts: list[str], value: Any, key: str) -> None:
    """Set ``value`` at the dotted path ``parts`` inside ``node``, in place, creating missing tables.

    In a list, a part is an index or ``*`` (every element); ``key`` is the
    whole override, named in the error when the path does not fit.
    """
    part, rest = parts[0], parts[1:]
    if isinstance(node, list):
        if part == "*":
            targets = list(range(len(node)))
        elif part.isdigit() and int(part) < len(node):
            targets = [int(part)]
        else:
            raise ConfigError("--set", f"{key}: '{part}' is not an index of a list of {len(node)} (or *)")
        for index in targets:
            if rest:
                set_path(node[index], rest, value, key)
            else:
                node[index] = value
    elif isinstance(node, dict):
        if rest:
            set_path(node.setdefault(part, {}), rest, value, key)
        else:
            node[part] = value
    else:
        raise ConfigError("--set", f"{key}: '{part}' is inside a value that is not a table")


def grid_points(source: dict[str, Any]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Every combination of a grid's axis values, with the raw configuration it gives.

    Returns
    -------
    list of (values, source)
        ``values`` maps each axis key to its value; ``source`` is the raw
        configuration of that point, without the grid.
    """
    grid = source["grid"]
    keys = list(grid["axes"])
    points = []
    for combination in itertools.product(*(grid["axes"][k] for k in keys)):
        values = dict(zip(keys, combination, strict=True))
        point = json.loads(json.dumps({k: v for k, v in source.items() if k != "grid"}))
        for key, value in values.items():
            set_path(point, key.split("."), json.loads(json.dumps(value)), key)
        points.append((values, point))
    return points
