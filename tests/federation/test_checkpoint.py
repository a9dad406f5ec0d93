"""Checkpoints: atomic, pickle-free round trips of server, client states and history."""

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fedmosaic.errors import FedmosaicError
from fedmosaic.federation.checkpoint import Checkpoint, load_checkpoint, save_checkpoint
from fedmosaic.federation.state import ClientState


def _checkpoint(tag: float = 1.0) -> Checkpoint:
    return Checkpoint(
        fingerprint=f"cfg-{tag}",
        server=ClientState(
            arrays={
                "w": np.arange(6, dtype=np.float32).reshape(2, 3) * tag,
                "counts": np.array([1, 2, 3], dtype=np.int64),
                "module/enc.weight": np.full((2,), tag),
            },
            config={"round": 3, "lr": 0.125, "name": "x", "flag": True, "names": ["a", "b"]},
        ),
        clients={
            0: ClientState(arrays={"m": np.array([tag, -tag])}, config={"handled": 2}),
            7: ClientState(arrays={}, config={"joined": 4}),
        },
        history=[
            {"round": 1, "status": "ok", "metrics": {"loss": 0.1 * tag}, "dropped": []},
            {"round": 2, "status": "skipped", "metrics": {}, "dropped": [1, 2], "reason": "why"},
        ],
        finished=tag > 1.0,
    )


def _assert_state_equal(actual: ClientState, expected: ClientState) -> None:
    assert list(actual.arrays) == list(expected.arrays)
    for name, array in expected.arrays.items():
        assert actual.arrays[name].dtype == array.dtype
        np.testing.assert_array_equal(actual.arrays[name], array)
    assert actual.config == expected.config


def _assert_checkpoint_equal(actual: Checkpoint, expected: Checkpoint) -> None:
    assert actual.fingerprint == expected.fingerprint
    _assert_state_equal(actual.server, expected.server)
    assert sorted(actual.clients) == sorted(expected.clients)
    for client_id, state in expected.clients.items():
        _assert_state_equal(actual.clients[client_id], state)
    assert actual.history == expected.history
    assert actual.finished == expected.finished


def test_round_trip_keeps_arrays_dtypes_config_clients_and_history(tmp_path: Path) -> None:
    # Prepare
    original = _checkpoint()
    path = tmp_path / "run" / "checkpoint.npz"

    # Execute
    save_checkpoint(original, path)
    loaded = load_checkpoint(path)

    # Assert
    _assert_checkpoint_equal(loaded, original)
    assert all(isinstance(c, int) for c in loaded.clients)


def test_loaded_arrays_are_independent_writeable_arrays(tmp_path: Path) -> None:
    path = tmp_path / "c.npz"
    save_checkpoint(_checkpoint(), path)
    loaded = load_checkpoint(path)
    loaded.server.arrays["w"][0, 0] = 99.0
    assert load_checkpoint(path).server.arrays["w"][0, 0] == 0.0


def test_saving_again_replaces_the_previous_checkpoint(tmp_path: Path) -> None:
    # Prepare
    path = tmp_path / "c.npz"
    save_checkpoint(_checkpoint(1.0), path)

    # Execute
    save_checkpoint(_checkpoint(2.0), path)

    # Assert
    _assert_checkpoint_equal(load_checkpoint(path), _checkpoint(2.0))
    assert [p.name for p in tmp_path.iterdir()] == ["c.npz"]


@pytest.mark.parametrize("crash", [OSError("disk full"), KeyboardInterrupt()])
def test_a_crash_while_writing_keeps_the_previous_checkpoint_and_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, crash: BaseException
) -> None:
    # Prepare
    path = tmp_path / "c.npz"
    save_checkpoint(_checkpoint(1.0), path)
    before = path.read_bytes()

    def torn_savez(handle: Any, **arrays: np.ndarray) -> None:
        handle.write(b"PK\x03\x04 half of a zip archive")
        raise crash

    monkeypatch.setattr(np, "savez", torn_savez)

    # Execute
    with pytest.raises(type(crash)):
        save_checkpoint(_checkpoint(2.0), path)
    monkeypatch.undo()

    # Assert
    assert path.read_bytes() == before
    _assert_checkpoint_equal(load_checkpoint(path), _checkpoint(1.0))
    assert [p.name for p in tmp_path.iterdir()] == ["c.npz"]


def test_a_crash_on_the_first_write_leaves_no_file_at_all(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Prepare
    def failing_savez(handle: Any, **arrays: np.ndarray) -> None:
        handle.write(b"partial")
        raise OSError("disk full")

    monkeypatch.setattr(np, "savez", failing_savez)

    # Execute
    with pytest.raises(OSError, match="disk full"):
        save_checkpoint(_checkpoint(), tmp_path / "c.npz")

    # Assert
    assert list(tmp_path.iterdir()) == []


def test_a_missing_file_is_a_user_facing_error(tmp_path: Path) -> None:
    with pytest.raises(FedmosaicError, match="unreadable"):
        load_checkpoint(tmp_path / "absent.npz")


def test_a_file_that_is_not_a_checkpoint_is_a_user_facing_error(tmp_path: Path) -> None:
    path = tmp_path / "c.npz"
    path.write_text("hello, not an archive")
    with pytest.raises(FedmosaicError, match="unreadable"):
        load_checkpoint(path)


def test_an_archive_without_metadata_is_a_user_facing_error(tmp_path: Path) -> None:
    path = tmp_path / "c.npz"
    with path.open("wb") as handle:
        np.savez(handle, w=np.zeros(2))
    with pytest.raises(FedmosaicError, match="unreadable"):
        load_checkpoint(path)


def test_another_format_version_is_refused(tmp_path: Path) -> None:
    # Prepare
    path = tmp_path / "c.npz"
    meta = json.dumps({"format_version": 999}).encode()
    with path.open("wb") as handle:
        np.savez(handle, __meta__=np.frombuffer(meta, dtype=np.uint8))

    # Execute / Assert
    with pytest.raises(FedmosaicError, match="format 999, expected 1"):
        load_checkpoint(path)


def test_loading_never_unpickles(tmp_path: Path) -> None:
    """An object array (which only pickle can store) makes the checkpoint unreadable."""
    # Prepare
    path = tmp_path / "c.npz"
    checkpoint = Checkpoint(fingerprint="f", server=ClientState(arrays={"evil": np.array([{"a": 1}], dtype=object)}))
    save_checkpoint(checkpoint, path)

    # Execute / Assert
    with pytest.raises(FedmosaicError, match="unreadable"):
        load_checkpoint(path)


@pytest.mark.parametrize("damage", ["truncated", "bit_flip"])
def test_a_damaged_checkpoint_is_a_user_facing_error(tmp_path: Path, damage: str) -> None:
    # Prepare
    path = tmp_path / "c.npz"
    save_checkpoint(_checkpoint(), path)
    data = path.read_bytes()
    data = data[: len(data) // 2] if damage == "truncated" else data[:120] + bytes([data[120] ^ 0xFF]) + data[121:]
    path.write_bytes(data)

    # Execute / Assert
    with pytest.raises(FedmosaicError, match="unreadable"):
        load_checkpoint(path)
