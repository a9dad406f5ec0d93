"""Shared arrays: large arrays cross processes as one mapped file, each distinct array once."""

from pathlib import Path

import numpy as np

from fedmosaic.federation.shared import pack_arrays, remove_shared, shared_folder, unpack_arrays, write_shared


def test_written_arrays_come_back_equal_and_read_only() -> None:
    arrays = [np.arange(10, dtype=np.int64), np.ones((3, 4), np.float32), np.zeros(0)]
    handle = write_shared(arrays, "fedmosaic-test-")
    attached = handle.attach()
    handle.unlink()
    for original, back in zip(arrays, attached, strict=True):
        np.testing.assert_array_equal(original, back)
        assert back.dtype == original.dtype
        assert not back.flags.writeable
    assert not Path(handle.path).exists()


def test_a_broadcast_array_is_stored_once_and_small_arrays_stay_inline() -> None:
    # Prepare: one large model array sent to three clients, plus a small array each.
    model = np.arange(20_000, dtype=np.float32)
    messages = {c: {"w": model, "b": np.full(2, float(c))} for c in range(3)}
    # Execute
    handle, packed = pack_arrays(messages, "fedmosaic-test-")
    # Assert
    assert handle is not None
    assert len(handle.layout) == 1
    assert all(packed[c]["w"] == 0 for c in range(3))
    attached = handle.attach()
    handle.unlink()
    for client in range(3):
        arrays = unpack_arrays(packed[client], attached)
        np.testing.assert_array_equal(arrays["w"], model)
        np.testing.assert_array_equal(arrays["b"], [client, client])


def test_only_small_arrays_need_no_file() -> None:
    handle, packed = pack_arrays({0: {"b": np.zeros(3)}}, "fedmosaic-test-")
    assert handle is None
    assert unpack_arrays(packed[0], [])["b"].tolist() == [0.0, 0.0, 0.0]


def test_left_over_files_are_removed_by_prefix() -> None:
    for _ in range(2):
        write_shared([np.zeros(4)], "fedmosaic-test-leftover-")
    remove_shared("fedmosaic-test-leftover-")
    assert not list(shared_folder().glob("fedmosaic-test-leftover-*"))
