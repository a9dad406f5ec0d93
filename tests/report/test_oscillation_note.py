"""The warning for a run whose validation loss swung period-2, on hand-made results."""

from typing import Any

from fedmosaic.methods.concepts.oscillation import ROUNDS
from fedmosaic.report.oscillation_note import oscillation_notes


def _results(*alternating: float, optimizer_state: str | None = None) -> dict[str, Any]:
    runs = [{"name": f"run {k}", "final": {"alternating_rounds": a}} for k, a in enumerate(alternating)]
    return {"runs": runs, "config": {"train": {"optimizer_state": optimizer_state}}}


def test_a_run_that_alternates_for_the_detectors_count_is_named_with_its_rounds() -> None:
    # Execute
    notes = oscillation_notes(_results(ROUNDS - 1, ROUNDS, 14))

    # Assert: the runs at the count and above, each once
    assert len(notes) == 2
    assert notes[0].startswith(f"run 1: its validation task loss went high and low by turns for {ROUNDS} rounds")
    assert notes[1].startswith("run 2: its validation task loss went high and low by turns for 14 rounds")
    assert all("period-2 oscillation" in note for note in notes)


def test_steady_runs_and_runs_without_the_count_give_no_warning() -> None:
    # Prepare: a method that does not count alternating rounds (FedAvg)
    results = _results(0, ROUNDS - 1)
    results["runs"].append({"name": "FedAvg", "final": {"accuracy": 0.9}})

    # Execute / Assert
    assert oscillation_notes(results) == []


def test_the_kept_optimizer_is_suggested_only_to_a_run_that_started_it_afresh() -> None:
    # Execute
    fresh = oscillation_notes(_results(12, optimizer_state="fresh"))
    default = oscillation_notes(_results(12))

    # Assert
    assert 'train.optimizer_state = "kept"' in fresh[0]
    assert "optimizer_state" not in default[0]


def test_a_grid_names_the_point_of_each_swinging_run() -> None:
    # Prepare
    results = {
        "config": {"train": {}},
        "points": [
            {"values": {"seed": 0}, "runs": [{"name": "F-CMs", "alternating_rounds": 3.0}]},
            {"values": {"seed": 1}, "runs": [{"name": "F-CMs", "alternating_rounds": 11.0}]},
        ],
    }

    # Execute
    notes = oscillation_notes(results)

    # Assert
    assert len(notes) == 1
    assert notes[0].startswith("F-CMs (seed=1): its validation task loss went high and low by turns for 11 rounds")
