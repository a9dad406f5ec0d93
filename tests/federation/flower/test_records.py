"""A fedmosaic Message crosses Flower as a RecordDict and comes back exactly."""

import numpy as np
import pytest
from flwr.common.serde import recorddict_from_proto, recorddict_to_proto

from fedmosaic.federation import Message
from fedmosaic.federation.flower.records import (
    ARRAYS,
    CONFIG,
    HEADER,
    METRICS,
    category,
    from_record_dict,
    to_record_dict,
)


def _over_the_wire(message: Message, header: dict) -> tuple[Message, dict]:
    """Encode, serialise to Flower's protobuf and back, decode."""
    content = recorddict_from_proto(recorddict_to_proto(to_record_dict(message, header)))
    return from_record_dict(content)


def test_arrays_config_metrics_and_kind_survive_the_wire_exactly() -> None:
    # Prepare
    arrays = {
        "concepts.asia.weight": np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4),
        "counts": np.array([3, 0, 7], dtype=np.int64),
        "mask": np.array([[True, False]]),
        "scalar": np.array(2.5, dtype=np.float64),
        "empty": np.zeros((0, 5), dtype=np.float16),
        "strided": np.arange(10, dtype=np.int32)[::3],
        "file": np.ones(1, dtype=np.uint8),
        "party/1/encoder.weight": np.eye(2, dtype=np.float64),
    }
    config = {"round": 3, "lr": 0.05, "graph": "a->b", "late": True, "ids": [1, 2], "names": ["x"], "none": []}
    message = Message(arrays=arrays, config=config, metrics={"num_examples": 12.0, "loss": 0.25}, kind="query.register")

    # Execute
    back, header = _over_the_wire(message, {"round": 3, "job": "0/federated"})

    # Assert
    assert back.kind == "query.register"
    assert header == {"round": 3, "job": "0/federated"}
    assert list(back.arrays) == list(arrays)
    for name, array in arrays.items():
        assert back.arrays[name].dtype == array.dtype, name
        assert back.arrays[name].shape == array.shape, name
        np.testing.assert_array_equal(back.arrays[name], array)
    assert back.config == config
    assert {k: type(v) for k, v in back.config.items()} == {k: type(v) for k, v in config.items()}
    assert back.metrics == message.metrics
    assert back.nbytes() == message.nbytes()


def test_a_read_only_view_is_encoded_like_the_array_itself() -> None:
    array = np.arange(4.0)
    view = array.view()
    view.flags.writeable = False

    back, _ = _over_the_wire(Message(arrays={"w": view}), {})

    np.testing.assert_array_equal(back.arrays["w"], array)


def test_each_part_goes_to_its_own_typed_record_and_the_arrays_travel_as_one_flower_array() -> None:
    content = to_record_dict(Message(arrays={"w": np.zeros(2), "b": np.ones(3)}, config={"c": 1}, metrics={"m": 1.0}))

    assert set(content.array_records) == {ARRAYS}
    assert len(content.array_records[ARRAYS]) == 1
    assert set(content.config_records) == {CONFIG, HEADER}
    assert set(content.metric_records) == {METRICS}


def test_a_record_dict_that_is_not_a_fedmosaic_message_is_refused() -> None:
    content = to_record_dict(Message())
    del content[METRICS]

    with pytest.raises(ValueError, match=r"fedmosaic\.metrics"):
        from_record_dict(content)


@pytest.mark.parametrize(
    ("kind", "expected"), [("train", "train"), ("evaluate", "evaluate"), ("query.register", "query")]
)
def test_the_flower_message_type_is_the_category_of_the_kind(kind: str, expected: str) -> None:
    assert category(kind) == expected
