"""What the model card of a run on sites' own tables says about its data.

Its inputs are the schema's feature columns, given raw: the card carries the
federated scaling (mean and standard deviation of every feature), which the
loaded model applies itself. Its classes and concepts are the schema's
categories, so predictions and interventions speak the sites' own words.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from fedmosaic.data.tables.schema import TablesSection
from fedmosaic.experiments.table_vertical import Scale
from fedmosaic.experiments.table_workload import TableWorkload
from fedmosaic.models.inputs import input_schema
from fedmosaic.models.scalings import TABLE_SCALING, VERTICAL_PARTS, VERTICAL_RAW


def describe_tables(workload: TableWorkload, nodes: list[str] | None = None) -> dict[str, Any]:
    """The card's ``inputs``, ``classes`` and, for a concept task, ``task`` and ``concepts``."""
    tables, scaling = workload.tables, workload.scaling
    assert scaling is not None
    shape = tuple(scaling.mean.shape)
    features = list(tables.features) or [f"x{k}" for k in range(scaling.mean.size)]
    standardise = ([float(v) for v in scaling.mean.flat], [float(v) for v in scaling.std.flat])
    described: dict[str, Any] = {"inputs": input_schema(features, shape, TABLE_SCALING, standardise=standardise)}
    if tables.kind == "horizontal":
        return described | {"classes": list(tables.classes)}
    assert tables.task is not None
    names = nodes or list(tables.concepts)
    return described | {
        "task": tables.task,
        "classes": list(tables.concepts[tables.task]),
        "concepts": {name: list(tables.concepts[name]) for name in names if name != tables.task},
    }


def describe_vertical_tables(tables: TablesSection, scales: Sequence[Scale | None]) -> dict[str, Any]:
    """The card's ``inputs`` (the parties' columns, party by party, and the ID column) and ``classes`` of a vertical table task.

    With every party's standardisation at hand (``scales``, in process), the
    model reads raw columns and standardises them itself. On a deployment
    the passive parties' stay with them: ``inputs.party_standardise`` holds
    the active party's and null for the others, whose part cards hold
    theirs (:func:`fedmosaic.models.parts.with_party_scales` joins them once
    the parts are gathered).
    """
    names = [party.column_names(k) for k, party in enumerate(tables.parties)]
    columns = [column for party in names for column in party]
    known = [scale for scale in scales if scale is not None]
    raw = len(known) == len(tables.parties)
    schema = input_schema(
        columns,
        (len(columns),),
        VERTICAL_RAW if raw else VERTICAL_PARTS,
        missing="NaN in every column of a party: that party does not hold the row",
        standardise=(
            ([float(v) for m, _ in known for v in m], [float(v) for _, s in known for v in s]) if raw else None
        ),
    )
    if not raw:
        schema["party_standardise"] = [None if scale is None else scale_entry(scale) for scale in scales]
    schema["parties"] = names
    if any(party.shape is not None for party in tables.parties):
        schema["party_shapes"] = [party.shape for party in tables.parties]
    schema["id"] = tables.id
    return {"inputs": schema, "classes": list(tables.classes)}


def scale_entry(scale: Scale) -> dict[str, list[float]]:
    """A party's standardisation as a card writes it.

    Examples
    --------
    >>> scale_entry((np.array([1.0]), np.array([2.0])))
    {'mean': [1.0], 'std': [2.0]}
    """
    return {"mean": [float(v) for v in scale[0]], "std": [float(v) for v in scale[1]]}


def raw_vertical_inputs(blocks: Sequence[np.ndarray], scales: Sequence[Scale | None]) -> np.ndarray:
    """The parties' blocks side by side: raw values where every party's standardisation is known, else as standardised.

    The card then says the same (:func:`describe_vertical_tables`).

    Examples
    --------
    >>> blocks, scale = [np.ones((1, 1), np.float32)] * 2, (np.array([1.0]), np.array([2.0]))
    >>> raw_vertical_inputs(blocks, [scale, scale]).tolist(), raw_vertical_inputs(blocks, [scale, None]).tolist()
    ([[3.0, 3.0]], [[1.0, 1.0]])
    """
    known = [scale for scale in scales if scale is not None]
    if len(known) < len(blocks):
        return np.concatenate(blocks, axis=1)
    raw = [block * scale[1] + scale[0] for block, scale in zip(blocks, known, strict=True)]
    return np.concatenate(raw, axis=1).astype(np.float32)


def table_evaluation_inputs(workload: TableWorkload) -> np.ndarray:
    """The coordinator's raw test features, one flat row per example (the model scales them itself)."""
    if workload.test is None:
        return np.zeros((0, math.prod(workload.example_shape())), np.float32)
    return workload.test.x.reshape(len(workload.test.x), -1)
