"""Message: named arrays, config and metrics; its size is what the federation counts."""

import numpy as np
import pytest

from fedmosaic.federation import ClientState, Message


def test_nbytes_is_array_buffers_plus_compact_json_of_config_and_metrics() -> None:
    # Prepare
    message = Message(
        arrays={"a": np.zeros(3, dtype=np.float64), "b": np.ones((2, 2), dtype=np.int32)},
        config={"round": 2, "lr": 0.1},
        metrics={"loss": 1.5},
    )
    expected = 3 * 8 + 4 * 4 + len(b'{"lr":0.1,"round":2}') + len(b'{"loss":1.5}')

    # Execute
    size = message.nbytes()

    # Assert
    assert size == expected == 72


def test_nbytes_of_an_empty_message_is_zero() -> None:
    assert Message().nbytes() == 0


def test_nbytes_counts_the_dtype_width_of_arrays() -> None:
    """The same shape in float32 costs half the bytes of float64."""
    # Prepare
    small = Message(arrays={"w": np.zeros(100, dtype=np.float32)})
    large = Message(arrays={"w": np.zeros(100, dtype=np.float64)})

    # Execute / Assert
    assert small.nbytes() == 400
    assert large.nbytes() == 800


def test_nbytes_counts_list_config_values_in_compact_json() -> None:
    # Prepare
    message = Message(config={"names": ["a", "b"], "ok": True})

    # Execute / Assert
    assert message.nbytes() == len(b'{"names":["a","b"],"ok":true}')


def test_read_only_views_reject_in_place_writes() -> None:
    # Prepare
    message = Message(arrays={"w": np.arange(4.0)})

    # Execute
    frozen = message.read_only()

    # Assert
    with pytest.raises(ValueError, match="read-only"):
        frozen.arrays["w"][0] = 42.0
    with pytest.raises(ValueError, match="read-only"):
        frozen.arrays["w"] += 1.0
    np.testing.assert_array_equal(message.arrays["w"], np.arange(4.0))


def test_read_only_shares_memory_with_the_original_instead_of_copying() -> None:
    # Prepare
    original = np.arange(6.0).reshape(2, 3)
    message = Message(arrays={"w": original})

    # Execute
    frozen = message.read_only()
    original[0, 0] = -1.0

    # Assert
    assert np.shares_memory(frozen.arrays["w"], original)
    assert frozen.arrays["w"][0, 0] == -1.0
    assert original.flags.writeable, "the sender's own array must stay writeable"


def test_read_only_copies_config_metrics_and_kind() -> None:
    """Changing the copy's config or metrics leaves the original as it was."""
    # Prepare
    message = Message(config={"round": 1}, metrics={"loss": 0.5}, kind="evaluate.local")

    # Execute
    frozen = message.read_only()
    frozen.config["round"] = 99
    frozen.metrics["loss"] = 9.0

    # Assert
    assert frozen.kind == "evaluate.local"
    assert message.config == {"round": 1}
    assert message.metrics == {"loss": 0.5}


def test_client_state_nbytes_counts_arrays_and_eight_bytes_per_config_entry() -> None:
    # Prepare
    state = ClientState(arrays={"m": np.zeros((2, 5), dtype=np.float32)}, config={"a": 1, "b": "x"})

    # Execute / Assert
    assert state.nbytes() == 40 + 16
