"""Specification of :class:`fedmosaic.explore.session.Explorer` and :func:`fedmosaic.explore.open_run`."""

from pathlib import Path

import numpy as np
import pytest

from fedmosaic import load_model
from fedmosaic.errors import FedmosaicError
from fedmosaic.explore import open_run
from fedmosaic.explore.session import Explorer

pytestmark = pytest.mark.xdist_group("small_fcm_run")  # one small trained run per worker


@pytest.fixture(scope="module")
def explorer(small_fcm_run: Path) -> Explorer:
    return open_run(small_fcm_run)


def test_an_answer_is_the_models_intervention_on_the_same_row(explorer: Explorer, small_fcm_run: Path) -> None:
    # Prepare
    row = explorer.examples.iloc[[1]]
    model = load_model(small_fcm_run)

    # Execute
    answer = explorer.answer(row.to_numpy()[0].tolist(), {"smoke": "yes"})

    # Assert
    expected = model.intervene(row, {"smoke": "yes"})
    assert answer.task == expected.probabilities[0].tolist()
    assert answer.concepts["smoke"] == [1.0, 0.0]
    assert answer.concepts["lung"] == expected.concepts["lung"][0].tolist()
    assert set(answer.changed) == set(model.descendants("smoke"))


def test_the_true_network_answers_with_exact_inference_on_the_set_concepts(explorer: Explorer) -> None:
    # Execute
    prior = explorer.bayes({})
    given = explorer.bayes({"either": "yes", "bronc": "yes"})

    # Assert: asia's P(dysp = yes) is 0.436 a priori, 0.9 given either and bronc
    assert prior is not None
    assert given is not None
    assert explorer.model.classes == ["yes", "no"]
    assert prior[0] == pytest.approx(0.436, abs=1e-3)
    assert given == pytest.approx([0.9, 0.1])


def test_the_description_lays_out_the_graph_with_edges_marked_against_the_truth(explorer: Explorer) -> None:
    # Execute
    found = explorer.description()

    # Assert
    assert found["task"] == "dysp"
    assert found["network_known"]
    assert {node["name"] for node in found["nodes"]} == set(explorer.model.graph["nodes"])
    assert {edge["status"] for edge in found["edges"]} <= {"correct", "reversed", "extra", "missing"}
    assert np.array(found["examples"]).shape == explorer.examples.shape


@pytest.mark.parametrize(
    ("features", "settings", "message"),
    [
        ([0.0], {}, "features: expected 32 values (x0 to x31), got 1"),
        (None, {"smok": "yes"}, "unknown concept 'smok'; did you mean 'smoke'?"),
        (None, {"smoke": "maybe"}, "smoke=maybe: unknown category"),
    ],
)
def test_bad_rows_and_settings_are_one_line_errors(
    explorer: Explorer, features: list[float] | None, settings: dict[str, str], message: str
) -> None:
    row = features if features is not None else explorer.examples.iloc[0].tolist()
    with pytest.raises(FedmosaicError, match=None) as error:
        explorer.answer(row, settings)
    assert message in str(error.value)
    assert "\n" not in str(error.value)


def test_without_a_known_network_there_is_no_true_answer_and_edges_are_unmarked(explorer: Explorer) -> None:
    # Prepare: the same model as if trained on data of no known network (a user's own table)
    own = Explorer(explorer.model, explorer.examples, None)

    # Execute
    answer = own.answer(explorer.examples.iloc[0].tolist(), {"smoke": "yes"})
    found = own.description()

    # Assert
    assert answer.bayes is None
    assert answer.task == explorer.answer(explorer.examples.iloc[0].tolist(), {"smoke": "yes"}).task
    assert not found["network_known"]
    assert {edge["status"] for edge in found["edges"]} == {"unknown"}
