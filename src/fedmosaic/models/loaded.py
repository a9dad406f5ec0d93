"""Models loaded from a model folder: predictions, and interventions on concept models.

Every loaded model has ``card``, ``classes``, ``concepts``, ``graph`` and
:meth:`LoadedModel.predict`; concept models (F-CMs) also honour
:meth:`LoadedModel.intervene`. Each class rebuilds its architecture from the
card alone, with the same model classes training used.
"""

from __future__ import annotations

import difflib
import json
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from typing_extensions import override

from fedmosaic.methods.concepts.models import ConceptGraph, ConceptModelParams, build_concept_model
from fedmosaic.methods.horizontal.models import Classifier
from fedmosaic.models.card import ModelFileError
from fedmosaic.models.files import read_part
from fedmosaic.models.inputs import checked_inputs
from fedmosaic.models.weights import loaded_network


@dataclass(frozen=True, eq=False)
class Prediction:
    """What a loaded model predicts for ``n`` examples.

    Parameters
    ----------
    probabilities : numpy.ndarray
        ``(n, classes)``: each class's probability.
    logits : numpy.ndarray
        ``(n, classes)``: the model's task logits (log-probabilities for
        models that average over samples).
    concepts : dict of str to numpy.ndarray
        Concept models: each concept's ``(n, categories)`` probabilities,
        one-hot for the concepts an intervention set.
    columns : dict of str to list of str
        The column names of :meth:`table`: per concept, then ``"class"`` (or
        the task's name), the names of its probabilities.
    """

    probabilities: np.ndarray
    logits: np.ndarray
    concepts: dict[str, np.ndarray] = field(default_factory=dict)
    columns: dict[str, list[str]] = field(default_factory=dict)

    def table(self) -> pd.DataFrame:
        """One column per probability: ``concept=category`` for each concept, then ``task=class``."""
        blocks = [*self.concepts.values(), self.probabilities]
        names = [name for group in self.columns.values() for name in group]
        return pd.DataFrame(np.concatenate(blocks, axis=1), columns=names)


class LoadedModel(ABC):
    """A model read from a model folder.

    Parameters
    ----------
    folder : Path
        The model folder.
    card : dict
        Its checked card.
    """

    def __init__(self, folder: Path, card: dict[str, Any]) -> None:
        self.folder = folder
        self.card = card

    @property
    def classes(self) -> list[str]:
        """The class names, in the order of the probabilities."""
        return list(self.card["classes"])

    @property
    def concepts(self) -> dict[str, list[str]]:
        """Each concept's categories, by name (empty for models without concepts)."""
        return {name: list(values) for name, values in self.card.get("concepts", {}).items()}

    @property
    def graph(self) -> dict[str, Any] | None:
        """The concept graph (``nodes``, ``task``, ``parents``, ``edges`` with consensus), or None."""
        return None

    @abstractmethod
    def predict(self, inputs: Any) -> Prediction:
        """Class probabilities (and concept probabilities) of each example of ``inputs``.

        Parameters
        ----------
        inputs : numpy.ndarray or pandas.DataFrame
            Rows of examples: arrays of the card's width or shape, or a
            DataFrame with the card's column names.
        """

    def intervene(self, inputs: Any, values: Mapping[str, Any]) -> Prediction:
        """Predict with some concepts fixed; only concept models can.

        Raises
        ------
        ModelFileError
            Always, for a model without concepts.
        """
        raise ModelFileError(f"{self.folder}: a {self.card['method']} model has no concepts to intervene on")

    def _checked(self, inputs: Any) -> np.ndarray:
        return checked_inputs(inputs, self.card["inputs"])


class ClassifierModel(LoadedModel):
    """A horizontal classifier (FedAvg, FedProx, FedCFA, FedMix): one network, one part."""

    def __init__(self, folder: Path, card: dict[str, Any]) -> None:
        super().__init__(folder, card)
        self.network = loaded_network(Classifier.from_json(card["architecture"]), *read_part(folder, card, "model"))
        self.network.eval()

    @override
    @torch.no_grad()
    def predict(self, inputs: Any) -> Prediction:
        logits = self.network(torch.from_numpy(self._checked(inputs)))
        return Prediction(
            torch.softmax(logits, dim=1).numpy(),
            logits.numpy(),
            columns={"class": [f"class={c}" for c in self.classes]},
        )


class ConceptModelFile(LoadedModel):
    """An F-CMs model (CBM, CEM, CGM or C2BM) over its concept graph."""

    def __init__(self, folder: Path, card: dict[str, Any]) -> None:
        super().__init__(folder, card)
        architecture = card["architecture"]
        spec = architecture["graph"]
        self.concept_graph = ConceptGraph(
            tuple(spec["nodes"]),
            spec["task"],
            dict(spec["cardinalities"]),
            {n: tuple(p) for n, p in spec["parents"].items()},
        )
        params = ConceptModelParams.model_validate_json(json.dumps(architecture["model"]))
        self.network = loaded_network(
            lambda: build_concept_model(int(architecture["input_dim"]), self.concept_graph, params, seed=0),
            *read_part(folder, card, "model"),
        )
        self.network.eval()

    @property
    def task(self) -> str:
        """The task node."""
        return self.concept_graph.task

    @override
    @property
    def graph(self) -> dict[str, Any]:
        graph = self.concept_graph
        return {
            "nodes": list(graph.nodes),
            "task": graph.task,
            "parents": {node: list(parents) for node, parents in graph.parents.items()},
            "edges": list(self.card.get("edges", [])),
        }

    def descendants(self, concept: str) -> frozenset[str]:
        """The nodes an intervention on ``concept`` can change: those the model computes from it.

        For CBM and CEM the task only; for CGM and C2BM the concept's
        descendants in the graph.
        """
        return frozenset(
            node
            for node in self.concept_graph.nodes
            if concept in self.network.dependencies([node]) and node != concept
        )

    @override
    def predict(self, inputs: Any) -> Prediction:
        return self.intervene(inputs, {})

    @torch.no_grad()
    def intervene(self, inputs: Any, values: Mapping[str, Any]) -> Prediction:
        """Predict with the concepts of ``values`` fixed; their descendants and the task are recomputed.

        Parameters
        ----------
        inputs : numpy.ndarray or pandas.DataFrame
            As in :meth:`predict`.
        values : mapping of str to value
            Per concept, a category (its name or its integer code) for every
            row, or an array with one per row.

        Raises
        ------
        ModelFileError
            On an unknown concept, the task, an unknown category, or an array
            of values of the wrong length.
        """
        x = self._checked(inputs)
        nodes = self.concept_graph.nodes
        truth = np.full((len(x), len(nodes)), -1, dtype=np.int64)
        for concept, value in values.items():
            column = nodes.index(self._concept(concept))
            truth[:, column] = self._codes(concept, value, len(x))
        mask = torch.from_numpy(truth >= 0)
        logits = self.network(torch.from_numpy(x), true_values=torch.from_numpy(truth), intervene=mask)
        probabilities = {node: torch.softmax(out, dim=1).numpy() for node, out in logits.items()}
        for k, node in enumerate(nodes):
            if mask[:, k].any():
                one_hot = np.eye(self.concept_graph.cardinalities[node], dtype=np.float32)[truth[:, k]]
                probabilities[node] = np.where(truth[:, k, None] >= 0, one_hot, probabilities[node])
        categories = self.concepts
        concepts = [node for node in nodes if node != self.task]
        return Prediction(
            probabilities[self.task],
            logits[self.task].numpy(),
            {node: probabilities[node] for node in concepts},
            {
                **{node: [f"{node}={c}" for c in categories[node]] for node in concepts},
                self.task: [f"{self.task}={c}" for c in self.classes],
            },
        )

    def _concept(self, name: str) -> str:
        if name == self.task:
            raise ModelFileError(
                f"intervene: {name!r} is the task, not a concept (concepts: {', '.join(self.concepts)})"
            )
        if name not in self.concepts:
            close = difflib.get_close_matches(name, list(self.concepts), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ModelFileError(f"intervene: unknown concept {name!r}{hint} (concepts: {', '.join(self.concepts)})")
        return name

    def _codes(self, concept: str, value: Any, rows: int) -> np.ndarray:
        """The integer codes of ``value`` (a category or one per row) for ``concept``."""
        categories = self.concepts[concept]
        given = np.asarray(value, dtype=object)
        if given.ndim > 1 or (given.ndim == 1 and len(given) != rows):
            raise ModelFileError(
                f"intervene: {concept}: give one category or one per row ({rows}), got shape {given.shape}"
            )
        codes = [self._code(concept, item, categories) for item in np.atleast_1d(given)]
        return np.broadcast_to(np.array(codes, dtype=np.int64), (rows,))

    @staticmethod
    def _code(concept: str, value: Any, categories: list[str]) -> int:
        """A category's code: by name first, else an integer code in range."""
        if str(value) in categories:
            return categories.index(str(value))
        text = str(value).strip()
        if not isinstance(value, (bool, np.bool_)) and text.isdigit() and int(text) < len(categories):
            return int(text)
        raise ModelFileError(
            f"intervene: {concept}={value}: unknown category (expected one of {', '.join(categories)})"
        )
