"""StateStore: client states in memory up to a budget, the least recently used on disk past it."""

import numpy as np

from fedmosaic.federation import ClientState
from fedmosaic.federation.store import StateStore


def _fill(store: StateStore, clients: range, size: int = 100) -> None:
    for client in clients:
        state = store.get(client)
        state.arrays["m"] = np.full(size, float(client))
        state.config["client"] = client


def test_without_budget_every_state_stays_in_memory() -> None:
    store = StateStore()
    _fill(store, range(5))
    store.trim()
    assert store.spilled == []
    assert list(store) == [0, 1, 2, 3, 4]


def test_past_the_budget_the_least_recently_used_states_go_to_disk_and_come_back_intact() -> None:
    # Prepare: 800 bytes per state, room for two.
    store = StateStore(budget_bytes=2 * 808 + 10)
    _fill(store, range(4))
    store.get(0)  # client 0 used again: the most recent
    # Execute
    store.trim()
    # Assert
    assert store.spilled == [1, 2]
    back = store.get(1)
    np.testing.assert_array_equal(back.arrays["m"], np.full(100, 1.0))
    assert back.config == {"client": 1}
    assert store.spilled == [2]
    store.close()


def test_a_snapshot_holds_every_state_spilled_or_not_and_replace_restores_it() -> None:
    store = StateStore(budget_bytes=0)
    _fill(store, range(3))
    store.trim()
    snapshot = store.snapshot()
    assert sorted(snapshot) == [0, 1, 2]
    assert store.spilled == [0, 1, 2]
    other = StateStore()
    other.replace(snapshot)
    assert other.get(2).config == {"client": 2}
    store.close()


def test_a_new_client_gets_an_empty_state() -> None:
    assert StateStore().get(7) == ClientState()


def test_close_deletes_the_spill_folder() -> None:
    store = StateStore(budget_bytes=0)
    _fill(store, range(2))
    store.trim()
    folder = store._folder
    assert folder is not None
    assert folder.exists()
    store.close()
    assert not folder.exists()
    assert list(store) == []
