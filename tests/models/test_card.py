"""Model folders: what a run writes, and the one-line errors for folders that cannot be loaded."""

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from safetensors.numpy import load_file

import fedmosaic
from fedmosaic.models.card import ModelFileError
from fedmosaic.models.parts import write_arrays


def copy_of(folder: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(folder, tmp_path / "model"))


def test_a_run_writes_one_model_per_run_with_weights_card_and_examples(digits_run) -> None:
    folders = sorted((digits_run.out / "model").iterdir())
    assert [f.name for f in folders] == ["00-fedavg", "01-fedcfa", "02-fedmix"]
    for folder in folders:
        assert sorted(p.name for p in folder.iterdir()) == ["card.json", "examples.csv", "model.safetensors"]
        card = json.loads((folder / "card.json").read_text())
        assert card["kind"] == "classifier"
        assert card["family"] == "mlp"
        assert card["seed"] == 0
        assert card["device"] == "cpu"
        assert card["inputs"]["shape"] == [1, 8, 8]
        assert len(card["inputs"]["columns"]) == 64
        assert card["classes"] == [str(k) for k in range(10)]
        assert card["config"]["name"] == "digits"
    results = digits_run.results["runs"]
    assert [json.loads((f / "card.json").read_text())["metrics"] for f in folders] == [run["final"] for run in results]


def test_the_examples_beside_a_model_are_test_rows_it_accepts(digits_run) -> None:
    model = fedmosaic.load_model(digits_run.out / "model" / "00-fedavg")
    examples = model.folder / model.card["examples"]
    assert model.predict(pd.read_csv(examples)).probabilities.shape == (5, 10)


def test_a_model_trained_on_a_gpu_loads_on_the_cpu(digits_run, tmp_path: Path) -> None:
    # Prepare: the same weights, with a card that says they were trained on CUDA
    trained_here = digits_run.out / "model" / "00-fedavg"
    folder = copy_of(trained_here, tmp_path)
    card = json.loads((folder / "card.json").read_text())
    (folder / "card.json").write_text(json.dumps({**card, "device": "cuda:0"}))
    examples = pd.read_csv(folder / card["examples"])

    # Execute
    model = fedmosaic.load_model(folder)

    # Assert: loaded on the CPU, it predicts as the model trained here
    assert model.card["device"] == "cuda:0"
    assert {p.device.type for p in model.network.parameters()} == {"cpu"}
    expected = fedmosaic.load_model(trained_here).predict(examples).probabilities
    assert (model.predict(examples).probabilities == expected).all()


def test_a_folder_without_a_model_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ModelFileError, match=r"no model here \(expected card.json"):
        fedmosaic.load_model(tmp_path)
    with pytest.raises(ModelFileError, match="no such model folder"):
        fedmosaic.load_model(tmp_path / "nowhere")


def test_a_folder_holding_several_models_asks_for_one(digits_run) -> None:
    with pytest.raises(
        ModelFileError, match=r"holds 3 models; pass one of them: .*00-fedavg, .*01-fedcfa, .*02-fedmix"
    ):
        fedmosaic.load_model(digits_run.out)


def test_a_card_from_a_newer_fedmosaic_is_refused(digits_run, tmp_path: Path) -> None:
    folder = copy_of(digits_run.out / "model" / "00-fedavg", tmp_path)
    card = json.loads((folder / "card.json").read_text())
    (folder / "card.json").write_text(json.dumps({**card, "fedmosaic_version": "99.0.0"}))
    with pytest.raises(
        ModelFileError, match=r"written by fedmosaic 99\.0\.0, newer than this 0\.1\.0; upgrade fedmosaic"
    ):
        fedmosaic.load_model(folder)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda card: {k: v for k, v in card.items() if k != "architecture"}, "model card lacks architecture"),
        (lambda card: {**card, "format": 2}, "card format 2 is not one this fedmosaic reads"),
        (lambda card: {**card, "kind": "forest"}, "kind 'forest' is not one this fedmosaic loads"),
    ],
    ids=["field-missing", "newer-format", "unknown-kind"],
)
def test_a_card_this_fedmosaic_cannot_read_is_refused(digits_run, tmp_path: Path, change, message: str) -> None:
    folder = copy_of(digits_run.out / "model" / "00-fedavg", tmp_path)
    card = json.loads((folder / "card.json").read_text())
    (folder / "card.json").write_text(json.dumps(change(card)))
    with pytest.raises(ModelFileError, match=message):
        fedmosaic.load_model(folder)


def test_a_missing_part_names_who_keeps_it(vfl_run, tmp_path: Path) -> None:
    folder = copy_of(vfl_run.out / "model" / "00-false-vfl", tmp_path)
    (folder / "party-1.safetensors").unlink()
    with pytest.raises(ModelFileError, match=r"part 'party-1' is not here; passive party 1 \(client 0\) keeps it"):
        fedmosaic.load_model(folder)


def test_each_passive_party_writes_its_part_with_a_part_card_whose_digest_the_card_records(vfl_run) -> None:
    folder = vfl_run.out / "model" / "00-false-vfl"
    card = json.loads((folder / "card.json").read_text())
    part = json.loads((folder / "party-1.json").read_text())
    assert part["part"] == "party-1"
    assert part["model"] == "model/00-false-vfl"
    assert part["sha256"] == card["parts"]["party-1"]["sha256"]
    assert "sha256" not in card["parts"]["party-0"]  # the coordinator's own part


def test_a_part_of_another_run_is_refused_by_its_digest(vfl_run, tmp_path: Path) -> None:
    # Prepare: party 1's file replaced by other weights of the same shapes
    folder = copy_of(vfl_run.out / "model" / "00-false-vfl", tmp_path)
    arrays = load_file(folder / "party-1.safetensors")
    write_arrays(folder / "party-1.safetensors", "party-1", {k: v + 1 for k, v in arrays.items()})
    # Execute / Assert
    with pytest.raises(
        ModelFileError, match=r"party-1.safetensors: not the part 'party-1' this model was trained with"
    ):
        fedmosaic.load_model(folder)


def test_a_model_without_concepts_cannot_be_intervened_on(digits_run) -> None:
    model = fedmosaic.load_model(digits_run.out / "model" / "00-fedavg")
    x = digits_run.workload.test.x[:2]
    with pytest.raises(ModelFileError, match="a fedavg model has no concepts to intervene on"):
        model.intervene(x, {"smoke": "yes"})
    assert model.concepts == {}
    assert model.graph is None


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda card: card["architecture"]["graph"]["cardinalities"].update(asia=3),
            "concepts.asia lists 2 categories, the architecture 3",
        ),
        (lambda card: card["concepts"].update(asia=["yes", "no", "maybe"]), "concepts.asia lists 3 categories"),
        (lambda card: card["concepts"].pop("tub"), r"concepts lacks the categories of \['tub'\]"),
        (lambda card: card["concepts"].update(smog=["no", "yes"]), r"concepts names \['smog'\], not concepts"),
        (
            lambda card: card["architecture"]["graph"].update(task="zzz"),
            "architecture.graph.task 'zzz' is not a node of the graph",
        ),
        (lambda card: card.update(classes=["yes", "no", "maybe"]), "classes lists 3 names, the architecture 2"),
    ],
    ids=["cardinality", "categories", "concept-missing", "concept-unknown", "task-unknown", "classes"],
)
def test_a_concept_models_card_that_disagrees_with_its_graph_is_refused(
    asia_run, tmp_path: Path, change, message
) -> None:
    # Prepare: the F-CMs model of a finished asia run, its card spoiled
    folder = copy_of(asia_run("cbm").out / "model" / "00-f-cms", tmp_path)
    card = json.loads((folder / "card.json").read_text())
    change(card)
    (folder / "card.json").write_text(json.dumps(card))
    # Execute / Assert
    with pytest.raises(ModelFileError, match=f"the card's fields disagree: {message}"):
        fedmosaic.load_model(folder)
