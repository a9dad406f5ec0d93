"""A server's scalar and JSON state, declared once and saved and restored by that one declaration.

A server lists its fields in one :class:`DeclaredState` table (name ->
codec) instead of writing them out twice, in ``state_dict`` and in
``load_state_dict``, where one side can be forgotten. Arrays (models, best
models) stay with the server, which knows their layout. The method contract
(``tests/methods/test_contract.py``) compares every attribute of a resumed
server with an uninterrupted one's, so a field missing from the table is
found too.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from fedmosaic.federation.message import ConfigValue, as_int


@dataclass(frozen=True)
class Codec:
    """How one field becomes a config value and back.

    Parameters
    ----------
    encode : callable value -> config value
    decode : callable config value -> value
    """

    encode: Callable[[Any], ConfigValue]
    decode: Callable[[ConfigValue], Any]


def _floats_or_none(value: ConfigValue) -> tuple[float, ...] | None:
    decoded = json.loads(str(value))
    return None if decoded is None else tuple(float(v) for v in decoded)


INT = Codec(int, as_int)
BOOL = Codec(bool, bool)
STR = Codec(str, str)
JSON = Codec(json.dumps, lambda value: json.loads(str(value)))
"""A JSON-ready value (lists, dicts with text keys) as JSON text."""
BY_CLIENT = Codec(
    lambda by_client: json.dumps({str(c): v for c, v in by_client.items()}),
    lambda value: {int(c): v for c, v in json.loads(str(value)).items()},
)
"""A dict keyed by client id, as JSON text (ids become text keys and back)."""
FLOATS_OR_NONE = Codec(json.dumps, _floats_or_none)
"""A tuple of floats, or None."""


@dataclass(frozen=True)
class DeclaredState:
    """Fields of a server saved in its config, by name.

    Parameters
    ----------
    fields : mapping of str to Codec
        The config key of each field and its codec.
    attribute_prefix : str, default ""
        The attribute holding field ``k`` is ``attribute_prefix + k`` (``"_"``
        for private attributes).

    Examples
    --------
    >>> class Counter:
    ...     rounds, log = 3, {1: "ok"}
    >>> state = DeclaredState({"rounds": INT, "log": BY_CLIENT})
    >>> config = state.save(Counter())
    >>> config
    {'rounds': 3, 'log': '{"1": "ok"}'}
    >>> restored = Counter.__new__(Counter)
    >>> state.load(restored, config)
    >>> restored.__dict__
    {'rounds': 3, 'log': {1: 'ok'}}
    """

    fields: Mapping[str, Codec]
    attribute_prefix: str = ""

    def save(self, owner: object) -> dict[str, ConfigValue]:
        """The fields of ``owner`` as config values."""
        return {key: codec.encode(getattr(owner, self.attribute_prefix + key)) for key, codec in self.fields.items()}

    def load(self, owner: object, config: Mapping[str, ConfigValue]) -> None:
        """Set the fields of ``owner`` from config values saved by :meth:`save`."""
        for key, codec in self.fields.items():
            setattr(owner, self.attribute_prefix + key, codec.decode(config[key]))
