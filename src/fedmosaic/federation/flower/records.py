"""A fedmosaic :class:`Message` as a Flower ``RecordDict``, and back.

The mapping is one to one: named arrays go to an ``ArrayRecord``, config to
a ``ConfigRecord`` and metrics to a ``MetricRecord``. The named arrays travel
packed into one Flower ``Array`` (an uncompressed ``.npz``, read back
without pickle, so dtype, shape and values come back exactly): Flower moves
every array of a message as an object of its own, one request per object
and per hop (ServerApp, SuperLink, SuperNode, ClientApp), so a message of
many small arrays, such as an F-CMs model, costs one object instead of
dozens. A fourth record, the
*header*, carries what the bridge itself needs on the other side (the
message's full kind, the round, which job it belongs to); it is transport,
not part of what the method sends, and is not counted in ``Message.nbytes``.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Mapping
from typing import cast

import numpy as np
from flwr.app import Array, ArrayRecord, ConfigRecord, MetricRecord, RecordDict
from flwr.app.typing import ConfigRecordValues

from fedmosaic.federation.message import ConfigValue, Message

ARRAYS = "fedmosaic.arrays"
CONFIG = "fedmosaic.config"
METRICS = "fedmosaic.metrics"
HEADER = "fedmosaic.header"
KIND = "kind"
PACKED = "npz"
"""The one entry of the arrays record: the message's named arrays, packed."""


def category(kind: str) -> str:
    """The Flower message type of a fedmosaic kind: ``query.register`` -> ``query``.

    Flower routes ``<category>.<action>`` only to handlers registered for that
    action; the bridge registers one handler per category and restores the
    full kind from the header.

    Examples
    --------
    >>> category("query.register"), category("train")
    ('query', 'train')
    """
    return kind.split(".", 1)[0]


def to_record_dict(message: Message, header: Mapping[str, ConfigValue] | None = None) -> RecordDict:
    """Encode ``message`` (and the bridge's ``header``) as a Flower ``RecordDict``.

    Parameters
    ----------
    message : Message
        The fedmosaic message.
    header : mapping of str to scalar or list, optional
        Bridge information sent along (job, round); ``kind`` is added.

    Returns
    -------
    flwr.app.RecordDict
        Records ``fedmosaic.arrays``, ``fedmosaic.config``, ``fedmosaic.metrics``
        and ``fedmosaic.header``.
    """
    head: dict[str, ConfigRecordValues] = {**(header or {}), KIND: message.kind}
    arrays = ArrayRecord({PACKED: Array(pack_arrays(message.arrays))})
    return RecordDict(
        {
            ARRAYS: arrays,
            CONFIG: ConfigRecord({**message.config}),
            METRICS: MetricRecord(dict(message.metrics)),
            HEADER: ConfigRecord(head),
        }
    )


def from_record_dict(content: RecordDict) -> tuple[Message, dict[str, ConfigValue]]:
    """Decode a ``RecordDict`` written by :func:`to_record_dict`.

    Returns
    -------
    (Message, dict)
        The message, and the header without the entries the codec itself uses.

    Raises
    ------
    ValueError
        If a record is missing or of the wrong type.
    """
    records: dict[str, Mapping[str, object]] = {
        ARRAYS: content.array_records,
        CONFIG: content.config_records,
        METRICS: content.metric_records,
        HEADER: content.config_records,
    }
    for name, group in records.items():
        if name not in group:
            raise ValueError(f"not a fedmosaic message: record {name!r} is missing")
    # Flower's records admit more (bytes, lists of numbers as metrics) than a Message declares; what a
    # party sent is typed as declared here and checked before use (check_reply drops what does not fit).
    header = cast("dict[str, ConfigValue]", dict(content.config_records[HEADER]))
    kind = str(header.pop(KIND))
    message = Message(
        arrays=unpack_arrays(content.array_records[ARRAYS][PACKED].numpy()),
        config=cast("dict[str, ConfigValue]", dict(content.config_records[CONFIG])),
        metrics=cast("dict[str, float]", dict(content.metric_records[METRICS])),
        kind=kind,
    )
    return message, header


def pack_arrays(arrays: Mapping[str, np.ndarray]) -> np.ndarray:
    """Named arrays as the bytes of one uncompressed ``.npz`` (a ``uint8`` array), in their order.

    Examples
    --------
    >>> back = unpack_arrays(pack_arrays({"w": np.arange(3, dtype=np.int16), "b": np.zeros((0, 2))}))
    >>> list(back), back["w"].dtype, back["b"].shape
    (['w', 'b'], dtype('int16'), (0, 2))
    """
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:  # np.savez's layout, any array name
        for name, array in arrays.items():
            with archive.open(f"{name}.npy", "w") as member:
                np.lib.format.write_array(member, np.asarray(array), allow_pickle=False)
    return np.frombuffer(buffer.getvalue(), dtype=np.uint8)


def unpack_arrays(packed: np.ndarray) -> dict[str, np.ndarray]:
    """The named arrays :func:`pack_arrays` packed (never unpickles)."""
    with np.load(io.BytesIO(packed.tobytes()), allow_pickle=False) as data:
        return {name: data[name] for name in data.files}
