"""Client states on the site's disk: per job, client and round; the latest before a round; two rounds kept."""

from pathlib import Path

import numpy as np

from fedmosaic.federation import ClientState
from fedmosaic.federation.flower.site_state import SiteStates


def _state(value: float) -> ClientState:
    return ClientState(arrays={"c": np.full(3, value, dtype=np.float32)}, config={"value": value})


def test_the_state_before_a_round_is_the_one_saved_at_the_latest_earlier_round(tmp_path: Path) -> None:
    # Prepare
    states = SiteStates(tmp_path)
    states.save("job", 1, 2, _state(2.0))
    states.save("job", 1, 5, _state(5.0))

    # Execute
    at_6, at_5, at_2 = (states.load_before("job", 1, rnd) for rnd in (6, 6, 2))

    # Assert
    assert at_6.config == {"value": 5.0}
    assert at_5.config == {"value": 5.0}
    np.testing.assert_array_equal(at_6.arrays["c"], np.full(3, 5.0, dtype=np.float32))
    assert at_6.arrays["c"].dtype == np.float32
    assert at_2 is None


def test_resuming_at_a_round_drops_the_files_of_that_round_and_later(tmp_path: Path) -> None:
    states = SiteStates(tmp_path)
    states.save("job", 0, 3, _state(3.0))
    states.save("job", 0, 4, _state(4.0))

    assert states.load_before("job", 0, 4).config == {"value": 3.0}
    assert states.load_before("job", 0, 9).config == {"value": 3.0}  # round 4 belonged to the abandoned run


def test_jobs_and_clients_do_not_share_states_and_two_rounds_are_kept(tmp_path: Path) -> None:
    states = SiteStates(tmp_path)
    for rnd in (1, 2, 3):
        states.save("job", 0, rnd, _state(float(rnd)))
    states.save("other", 0, 1, _state(-1.0))

    assert states.load_before("job", 1, 9) is None
    assert states.load_before("other", 0, 9).config == {"value": -1.0}
    assert len(list(tmp_path.rglob("round-*.npz"))) == 3  # rounds 2 and 3 of "job", round 1 of "other"
