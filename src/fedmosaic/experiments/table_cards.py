"""What the model card of a run on sites' own tables says about its data.

Its inputs are the schema's feature columns, given raw: the card carries the
federated scaling (mean and standard deviation of every feature), which the
loaded model applies itself. Its classes and concepts are the schema's
categories, so predictions and interventions speak the sites' own words.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fedmosaic.data.tables.schema import TablesSection
from fedmosaic.experiments.table_workload import TableWorkload
from fedmosaic.models.inputs import input_schema

SCALING = "raw values of the schema's feature columns; the model standardises them with the federated mean and standard deviation"
"""The card's description of the inputs' scaling."""


def describe_tables(workload: TableWorkload, nodes: list[str] | None = None) -> dict[str, Any]:
    """The card's ``inputs``, ``classes`` and, for a concept task, ``task`` and ``concepts``."""
    tables, scaling = workload.tables, workload.scaling
    assert scaling is not None
    features = list(tables.features)
    standardise = ([float(v) for v in scaling.mean], [float(v) for v in scaling.std])
    described: dict[str, Any] = {"inputs": input_schema(features, (len(features),), SCALING, standardise=standardise)}
    if tables.kind == "horizontal":
        return described | {"classes": list(tables.classes)}
    assert tables.task is not None
    names = nodes or list(tables.concepts)
    return described | {
        "task": tables.task,
        "classes": list(tables.concepts[tables.task]),
        "concepts": {name: list(tables.concepts[name]) for name in names if name != tables.task},
    }


VERTICAL_SCALING = "each party's columns standardised by that party (the active party over all its rows, a passive party over the rows it serves; the statistics stay with it)"
"""The card's description of a vertical table model's inputs."""


def describe_vertical_tables(tables: TablesSection) -> dict[str, Any]:
    """The card's ``inputs`` (the parties' columns, party by party) and ``classes`` of a vertical table task."""
    columns = [column for party in tables.parties for column in party.features]
    schema = input_schema(
        columns,
        (len(columns),),
        VERTICAL_SCALING,
        missing="NaN in every column of a party: that party does not hold the row",
    )
    schema["parties"] = [list(party.features) for party in tables.parties]
    return {"inputs": schema, "classes": list(tables.classes)}


def table_evaluation_inputs(workload: TableWorkload) -> np.ndarray:
    """The coordinator's raw test features (the model scales them itself)."""
    return np.zeros((0, len(workload.tables.features)), np.float32) if workload.test is None else workload.test.x
