"""What ``fedmosaic explore`` computes: an F-CMs model's answer, and the true network's, for one row.

An :class:`Explorer` holds a loaded F-CMs model, the example rows written
beside it and, when the data were sampled from a known network, that network.
Everything the page shows comes from :meth:`Explorer.answer`, computed by the
model itself (``intervene``) and by exact inference on the network (pgmpy).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fedmosaic.data.csv_rows import read_csv
from fedmosaic.errors import FedmosaicError
from fedmosaic.models.files import EXAMPLES
from fedmosaic.models.loaded import ConceptModelFile
from fedmosaic.report.graphs import compare_edges, layered_layout

with warnings.catch_warnings():
    warnings.simplefilter("ignore", FutureWarning)
    from pgmpy.inference import VariableElimination
    from pgmpy.models import DiscreteBayesianNetwork


@dataclass(frozen=True)
class Answer:
    """The model's and the network's answer for one row with some concepts set.

    Attributes
    ----------
    concepts : dict[str, list[float]]
        Each concept's probabilities, in the order of its categories (one-hot where set).
    task : list[float]
        The model's class probabilities.
    bayes : list[float] or None
        ``P(task | the set concepts)`` under the true network, in class order; None without a network.
    changed : list[str]
        The nodes the set concepts can change in this model (their descendants and the task).
    """

    concepts: dict[str, list[float]]
    task: list[float]
    bayes: list[float] | None
    changed: list[str]


class Explorer:
    """An F-CMs model to explore, with example rows and, when known, the true network.

    Parameters
    ----------
    model : ConceptModelFile
        The loaded model.
    examples : pandas.DataFrame
        Rows of inputs to pick from (the card's columns).
    network : DiscreteBayesianNetwork or None
        The network the data were sampled from, when known.
    """

    def __init__(
        self, model: ConceptModelFile, examples: pd.DataFrame, network: DiscreteBayesianNetwork | None
    ) -> None:
        self.model = model
        self.examples = examples
        self.network = network
        self._inference = VariableElimination(network) if network is not None else None

    @classmethod
    def open(cls, model: ConceptModelFile, network: DiscreteBayesianNetwork | None = None) -> Explorer:
        """Explore ``model`` on the example rows written beside it (``examples.csv``)."""
        path = Path(model.folder) / EXAMPLES
        if not path.is_file():
            raise FedmosaicError(f"{model.folder}: no {EXAMPLES} beside the model to pick rows from")
        try:
            examples = read_csv(path)
        except (OSError, ValueError) as error:
            raise FedmosaicError(f"{path}: cannot read the example rows ({error})") from None
        return cls(model, examples, network)

    def description(self) -> dict[str, Any]:
        """What the page draws once: the graph laid out, categories, classes, example rows, the card's essentials."""
        graph = self.model.graph
        truth = sorted((str(a), str(b)) for a, b in self.network.edges()) if self.network is not None else None
        marks = compare_edges(graph["parents"], truth)
        scores = {(e["source"], e["target"]): e["score"] for e in graph.get("edges", []) if "score" in e}
        layout = layered_layout(graph["parents"])
        card = self.model.card
        return {
            "title": f"{card.get('run', card['method'])} · {card.get('family', '')} · {card['method']}",
            "task": graph["task"],
            "classes": self.model.classes,
            "concepts": self.model.concepts,
            "nodes": [{"name": n, "x": x, "layer": layer} for n, (x, layer) in layout.items()],
            "edges": [
                {"source": a, "target": b, "status": status, "score": scores.get((a, b))}
                for (a, b), status in marks.items()
            ],
            "columns": list(self.examples.columns),
            "examples": self.examples.to_numpy(dtype=float).tolist(),
            "network_known": self.network is not None,
            "metrics": {k: card.get("metrics", {}).get(k) for k in ("accuracy", "concept_accuracy")},
        }

    def answer(self, features: Sequence[float], settings: Mapping[str, str]) -> Answer:
        """Predict one row with the concepts of ``settings`` set to the given categories.

        Parameters
        ----------
        features : Sequence[float]
            The row's inputs, in the card's column order.
        settings : Mapping[str, str]
            Concept -> category name.

        Returns
        -------
        Answer

        Raises
        ------
        FedmosaicError
            On a row of the wrong width, an unknown concept or category.
        """
        columns = list(self.examples.columns)
        if len(features) != len(columns):
            raise FedmosaicError(
                f"features: expected {len(columns)} values ({columns[0]} to {columns[-1]}), got {len(features)}"
            )
        row = pd.DataFrame([list(features)], columns=columns).astype(np.float32)
        prediction = self.model.intervene(row, dict(settings))
        changed = sorted({node for concept in settings for node in self.model.descendants(concept)})
        return Answer(
            concepts={name: [float(p) for p in values[0]] for name, values in prediction.concepts.items()},
            task=[float(p) for p in prediction.probabilities[0]],
            bayes=self.bayes(settings),
            changed=changed,
        )

    def bayes(self, settings: Mapping[str, str]) -> list[float] | None:
        """``P(task | settings)`` under the true network, in the model's class order; None without a network."""
        if self._inference is None or self.network is None:
            return None
        task = self.model.task
        evidence = {concept: category for concept, category in settings.items() if concept in self.network.nodes()}
        posterior = self._inference.query([task], evidence=evidence or None, show_progress=False)
        states = list(posterior.state_names[task])
        return [float(posterior.values[states.index(name)]) for name in self.model.classes]
