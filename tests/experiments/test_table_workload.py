"""Workloads from sites' own tables: horizontal runs, the pooled concept site, a node's own site only."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_iris

from fedmosaic.errors import FedmosaicError
from fedmosaic.experiments.config import load_config
from fedmosaic.experiments.runner import run_experiment
from fedmosaic.experiments.table_workload import NODE_FILE, _pooled, node_workload
from fedmosaic.methods.concepts.graph import ConfidenceMatrix
from fedmosaic.methods.concepts.task import ConceptClientData, LabeledConcepts

FEATURES = ["sepal_length", "sepal_width", "petal_length", "petal_width"]
CLASSES = ["setosa", "versicolor", "virginica"]


def _iris_sites(folder: Path) -> dict:
    data = load_iris()
    frame = pd.DataFrame(data.data, columns=FEATURES)
    frame["species"] = np.array(CLASSES)[data.target]
    order = np.random.default_rng(0).permutation(len(frame))
    for k, rows in enumerate(np.array_split(order[:120], 3)):
        frame.iloc[rows].to_csv(folder / f"site-{k}.csv", index=False)
    frame.iloc[order[120:]].to_parquet(folder / "test.parquet")
    return {
        "name": "iris-sites",
        "tables": {
            "kind": "horizontal",
            "features": FEATURES,
            "label": "species",
            "classes": CLASSES,
            "sites": [{"file": str(folder / f"site-{k}.csv")} for k in range(3)],
            "test": str(folder / "test.parquet"),
        },
        "federation": {"rounds": 4},
        "model": {"hidden": [16]},
        "train": {"lr": 0.1, "epochs": 5, "batch_size": 16},
        "runs": [
            {"name": "FedAvg", "method": "fedavg"},
            {"name": "Centralized", "method": "fedavg", "setting": "centralized"},
        ],
    }


def test_a_horizontal_task_runs_on_the_sites_tables_scaled_by_the_pooled_statistics(tmp_path: Path) -> None:
    # Prepare
    source = _iris_sites(tmp_path)
    # Execute
    results = run_experiment(load_config(source), tmp_path / "out")
    # Assert
    assert all(run["final"]["accuracy"] > 0.6 for run in results["runs"])
    card = json.loads((tmp_path / "out/model/00-fedavg/card.json").read_text())
    pooled = pd.concat([pd.read_csv(tmp_path / f"site-{k}.csv") for k in range(3)])[FEATURES].to_numpy()
    assert card["classes"] == CLASSES
    assert card["inputs"]["columns"] == FEATURES
    assert np.allclose(card["inputs"]["standardise"]["mean"], pooled.mean(axis=0))
    assert np.allclose(card["inputs"]["standardise"]["std"], pooled.std(axis=0))


def test_a_node_reads_only_its_own_table_and_takes_the_scaling_it_is_sent(tmp_path: Path) -> None:
    # Prepare
    config = load_config(_iris_sites(tmp_path))
    (tmp_path / "site-1.csv").rename(tmp_path / "mine.csv")
    header = {"scaling-mean": [1.0, 2.0, 3.0, 4.0], "scaling-std": [1.0, 1.0, 1.0, 2.0]}
    # Execute
    workload = node_workload(config, 1, {NODE_FILE: str(tmp_path / "mine.csv")}, header)
    (job,) = workload.jobs("federated", config)
    # Assert
    mine = pd.read_csv(tmp_path / "mine.csv")[FEATURES].to_numpy()
    assert np.allclose(job.task.clients[1].x, (mine - [1.0, 2.0, 3.0, 4.0]) / [1.0, 1.0, 1.0, 2.0], atol=1e-6)
    with pytest.raises(FedmosaicError, match="site 0's table is not on this node"):
        job.task.clients[0]


def test_the_pooled_site_leaves_unlabeled_what_a_site_does_not_label_and_averages_beliefs() -> None:
    # Prepare
    def client(names, values, belief) -> ConceptClientData:
        rows = LabeledConcepts(np.zeros((len(values), 1), np.float32), np.array(values), names)
        return ConceptClientData(rows, rows, ConfidenceMatrix(names, np.array(belief)))

    a = client(("c", "y"), [[0, 1], [1, 1], [1, 0]], [[0.0, 0.9], [0.0, 0.0]])
    b = client(("d", "y"), [[1, 0]], [[0.0, 0.5], [0.1, 0.0]])
    tables = load_config(
        {
            "name": "x",
            "tables": {
                "kind": "concepts",
                "features": ["f"],
                "task": "y",
                "test": "t.csv",
                "sites": [{"file": "a.csv"}],
                "concepts": {"c": ["0", "1"], "d": ["0", "1"], "y": ["0", "1"]},
            },
            "runs": [{"name": "F-CMs", "method": "fcm"}],
        }
    ).tables
    # Execute
    pooled = _pooled([a, b], tables)
    # Assert
    assert pooled.train.names == ("c", "d", "y")
    assert pooled.train.values.tolist() == [[0, -1, 1], [1, -1, 1], [1, -1, 0], [-1, 1, 0]]
    assert np.allclose(pooled.confidence.values, [[0, 0, 0.9], [0, 0, 0.5], [0, 0.1, 0]])
