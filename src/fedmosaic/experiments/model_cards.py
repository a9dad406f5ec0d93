"""Writing each run's tested model into its output folder: the card from the run, the weights from the method.

A job's model goes to ``<out>/model/<nn>-<run>/`` (``.../<job>/`` for the
jobs of a ``local`` run, one model per client). The card joins what the
method exports (architecture, weights, graph consensus) with what the
experiment knows: the input schema, class and concept names, the test
metrics, the configuration and the seed.
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from fedmosaic.devices import compute_device
from fedmosaic.experiments.classification import ClassificationWorkload
from fedmosaic.experiments.config import ExperimentConfig
from fedmosaic.experiments.table_cards import (
    describe_tables,
    describe_vertical_tables,
    raw_vertical_inputs,
    table_evaluation_inputs,
)
from fedmosaic.experiments.table_workload import TableWorkload
from fedmosaic.experiments.vertical_workload import VerticalWorkload
from fedmosaic.experiments.workloads import ConceptWorkload
from fedmosaic.models.card import CARD_FORMAT
from fedmosaic.models.export import ModelExport
from fedmosaic.models.files import EXAMPLES, write_model
from fedmosaic.models.inputs import input_schema
from fedmosaic.models.loader import MODEL_DIR
from fedmosaic.models.parts import SUFFIX
from fedmosaic.models.scalings import DATASET_SCALING, LOADER_SCALING
from fedmosaic.version import __version__

Workload = ClassificationWorkload | ConceptWorkload | VerticalWorkload | TableWorkload
EXAMPLE_ROWS = 5
"""Test rows written beside each model as ``examples.csv``, inputs to try it on."""

CLASS_NAMES: dict[str, list[str]] = {
    "fashion-mnist": [
        "T-shirt/top",
        "Trouser",
        "Pullover",
        "Dress",
        "Coat",
        "Sandal",
        "Shirt",
        "Sneaker",
        "Bag",
        "Ankle boot",
    ],
    "isolet": list(string.ascii_lowercase),
}
"""Class names of the datasets whose classes are not their indices."""


def slug(name: str) -> str:
    """A name as a folder name: lower case, runs of other characters as one ``-``.

    Examples
    --------
    >>> slug("FALSE-VFL (paper)"), slug("!")
    ('false-vfl-paper', 'run')
    """
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "run"


def model_path(out_dir: Path, run_index: int, run_slug: str, job_label: str | None) -> Path:
    """The model folder of a run's job (``job_label`` None: the run has one job)."""
    folder = out_dir / MODEL_DIR / f"{run_index:02d}-{run_slug}"
    return folder if job_label is None else folder / job_label


def write_job_model(
    folder: Path,
    export: ModelExport,
    written: Mapping[str, str],
    *,
    config: ExperimentConfig,
    workload: Workload,
    run: dict[str, Any],
    metrics: dict[str, float],
) -> None:
    """Write the model of one job: the server's part and the card (the clients write theirs).

    Parameters
    ----------
    folder : Path
        The model folder (:func:`model_path`).
    export : ModelExport
        What the method's server exported.
    written : mapping of str to str
        The SHA-256 of each part a client wrote itself, by part name
        (:func:`~fedmosaic.experiments.model_parts.export_parts`); the card
        records it, so that a part gathered from its party is checked.
    config : ExperimentConfig
        The experiment.
    workload : Workload
        Its data (for the input schema and the names).
    run : dict
        ``name``, ``method``, ``setting`` and ``params`` of the run.
    metrics : dict
        The job's final test metrics.

    Notes
    -----
    The card's ``device`` is the one the run computed on (its resolved
    ``train.device``: ``cuda`` for ``auto`` on a GPU); the weights are
    written from the CPU and load on any machine.
    """
    holders = {export.part: "the server (active party)" if export.client_parts else "the server"}
    holders |= {name: f"passive party {k + 1} (client {k})" for k, name in enumerate(export.client_parts)}
    card = {
        "format": CARD_FORMAT,
        "fedmosaic_version": __version__,
        "kind": export.kind,
        "method": run["method"],
        "family": _family(export),
        "run": run["name"],
        "setting": run["setting"],
        "params": run["params"],
        "architecture": export.architecture,
        "parts": {
            name: {"file": name + SUFFIX, "holder": holder} | ({"sha256": written[name]} if name in written else {})
            for name, holder in holders.items()
        },
        **describe_data(config, workload, export.architecture.get("graph", {}).get("nodes")),
        "examples": EXAMPLES,
        **export.details,
        "metrics": metrics,
        "seed": config.seed,
        "device": str(compute_device()),
        "config": config.document(),
    }
    write_model(folder, card, {export.part: export.arrays}, evaluation_inputs(workload)[:EXAMPLE_ROWS])


def _family(export: ModelExport) -> str:
    """The model family: ``cbm``/``cem``/``cgm``/``c2bm``, a registered architecture, ``factory``, or the vertical method."""
    model = export.architecture.get("model")
    if isinstance(model, dict):
        return str(model.get("family", model.get("kind", "factory")))
    return export.kind


def describe_data(config: ExperimentConfig, workload: Workload, nodes: list[str] | None = None) -> dict[str, Any]:
    """The card's ``inputs``, ``classes`` and, for concept data, ``task`` and ``concepts`` (those of ``nodes`` if given)."""
    if isinstance(workload, TableWorkload):
        return describe_tables(workload, nodes)
    if isinstance(workload, VerticalWorkload) and config.tables is not None:
        return describe_vertical_tables(config.tables, workload.scales)
    dataset = config.data.dataset
    scaling = DATASET_SCALING.get(dataset, LOADER_SCALING)
    if isinstance(workload, ConceptWorkload):
        test = workload.splits.test
        width = test.x.shape[1]
        task = workload.splits.task
        return {
            "inputs": input_schema([f"x{k}" for k in range(width)], (width,), scaling),
            "task": task,
            "classes": list(test.states[task]),
            "concepts": {name: list(test.states[name]) for name in (nodes or test.names) if name != task},
        }
    if isinstance(workload, VerticalWorkload):
        data = workload.data
        widths = data.widths
        columns = [f"p{party}_x{k}" for party, width in enumerate(widths) for k in range(width)]
        schema = input_schema(
            columns,
            (len(columns),),
            scaling,
            missing="NaN in every column of a party: that party does not hold the row",
        )
        schema["parties"] = [[f"p{party}_x{k}" for k in range(width)] for party, width in enumerate(widths)]
        return {"inputs": schema, "classes": _classes(dataset, data.num_classes)}
    shape = tuple(int(n) for n in workload.test.x.shape[1:])
    prefix = "pixel" if len(shape) > 1 else "x"
    columns = [f"{prefix}{k}" for k in range(int(np.prod(shape)))]
    return {"inputs": input_schema(columns, shape, scaling), "classes": _classes(dataset, workload.test.num_classes)}


def evaluation_inputs(workload: Workload) -> np.ndarray:
    """The test inputs, one flat row per example (a vertical task's first test setting, NaN where a party is absent; raw on parties' tables)."""
    if isinstance(workload, ConceptWorkload):
        return workload.splits.test.x
    if isinstance(workload, TableWorkload):
        return table_evaluation_inputs(workload)
    if isinstance(workload, VerticalWorkload):
        return raw_vertical_inputs(next(iter(workload.data.tests.values())).blocks, workload.scales)
    return workload.test.x.reshape(len(workload.test.x), -1)


def _classes(dataset: str, count: int) -> list[str]:
    names = CLASS_NAMES.get(dataset, [])
    return names if len(names) == count else [str(k) for k in range(count)]
