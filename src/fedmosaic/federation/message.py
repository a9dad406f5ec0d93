"""Messages: the only thing that crosses a party boundary.

A :class:`Message` holds named arrays, a configuration mapping and scalar
metrics, nothing else. It maps one to one onto Flower's ``RecordDict``
(``ArrayRecord``, ``ConfigRecord``, ``MetricRecord``), and its size in bytes is
what the federation counts as communication.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

ConfigScalar = int | float | str | bool
ConfigValue = ConfigScalar | list[int] | list[float] | list[str] | list[bool]


def as_int(value: ConfigValue) -> int:
    """A configuration value read as ``int()`` reads it; a list raises :class:`TypeError`, as ``int()`` does.

    Examples
    --------
    >>> as_int(3), as_int("4"), as_int(2.0)
    (3, 4, 2)
    """
    if isinstance(value, list):
        raise TypeError(f"expected a number, got a list of {len(value)} values")
    return int(value)


def as_float(value: ConfigValue) -> float:
    """A configuration value read as ``float()`` reads it; a list raises :class:`TypeError`, as ``float()`` does.

    Examples
    --------
    >>> as_float(3), as_float("0.5")
    (3.0, 0.5)
    """
    if isinstance(value, list):
        raise TypeError(f"expected a number, got a list of {len(value)} values")
    return float(value)


@dataclass
class Message:
    """A message between the server logic and one client.

    Parameters
    ----------
    arrays : dict of str to numpy.ndarray, default empty
        Named tensors (model parameters, statistics). Treated as read-only by
        the receiver.
    config : dict of str to scalar or list, default empty
        Instructions and small values (round number, hyper-parameters).
    metrics : dict of str to float, default empty
        Scalars reported back (sample counts, losses).
    kind : str, default "train"
        The message type, as in Flower: ``train``, ``evaluate`` or ``query``,
        optionally followed by ``.<action>``.

    Examples
    --------
    >>> import numpy as np
    >>> m = Message(arrays={"w": np.zeros(4, dtype=np.float32)}, config={"round": 1})
    >>> m.nbytes()
    27
    """

    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    config: dict[str, ConfigValue] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    kind: str = "train"

    def nbytes(self) -> int:
        """Bytes this message occupies on the wire.

        Arrays count their raw buffer size; config and metrics count their
        compact JSON encoding.

        Returns
        -------
        int
            Total size in bytes.
        """
        array_bytes = sum(int(a.nbytes) for a in self.arrays.values())
        return array_bytes + _json_size(self.config) + _json_size(self.metrics)

    def read_only(self) -> Message:
        """Return a copy whose arrays are read-only views of these arrays.

        The in-process engine hands messages over without copying their data;
        read-only views make an accidental in-place change fail loudly.
        """
        return Message(
            arrays={name: _read_only_view(a) for name, a in self.arrays.items()},
            config=dict(self.config),
            metrics=dict(self.metrics),
            kind=self.kind,
        )


def _read_only_view(array: np.ndarray) -> np.ndarray:
    view = np.asarray(array).view()
    view.flags.writeable = False
    return view


def _json_size(mapping: Mapping[str, object]) -> int:
    if not mapping:
        return 0
    return len(json.dumps(mapping, separators=(",", ":"), sort_keys=True).encode())
