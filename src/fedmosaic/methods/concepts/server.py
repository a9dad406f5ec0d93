"""The F-CMs server: fuses the clients' graphs, grows the model, averages module by module."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
from typing_extensions import override

from fedmosaic.data.confidence import ConfidenceMatrix
from fedmosaic.devices import to_device
from fedmosaic.errors import FedmosaicError
from fedmosaic.federation import (
    ArraySpec,
    ClientState,
    Message,
    QuorumNotMet,
    ReplySpec,
    RoundContext,
    ServerLogic,
    derive_rng,
    derive_seed,
)
from fedmosaic.methods.arrays import load_arrays, model_to_arrays
from fedmosaic.methods.concepts.client import REGISTER, TRAIN
from fedmosaic.methods.concepts.graph import aggregate_graph, consensus_record
from fedmosaic.methods.concepts.metrics import concept_scores, coverage, intervention_curve, random_order, task_accuracy
from fedmosaic.methods.concepts.models import ConceptGraph, ConceptModel, build_concept_model
from fedmosaic.methods.concepts.oscillation import alternating_rounds
from fedmosaic.methods.concepts.params import FCMParams
from fedmosaic.methods.concepts.task import ConceptTask, LabeledConcepts, decode_graph, encode_graph
from fedmosaic.methods.declared_state import BOOL, BY_CLIENT, FLOATS_OR_NONE, INT, JSON, STR, DeclaredState
from fedmosaic.methods.training import DP_SGD_EPSILON
from fedmosaic.models.export import ModelExport

CONCEPT_METRICS = (
    "concept_accuracy",
    "balanced_concept_accuracy",
    "own_concept_accuracy",
    "own_balanced_concept_accuracy",
)
"""Concept accuracy, plain and balanced, over the task's true ancestors (comparable across runs) and over the model's own concepts."""
STATE = DeclaredState(
    {
        "seed": INT,
        "model_seed": INT,
        "registry": BY_CLIENT,
        "rejected": BY_CLIENT,
        "best_graph": STR,
        "best_key": FLOATS_OR_NONE,
        "best_round": INT,
        "bad_rounds": INT,
        "rounds_trained_since_change": INT,
        "stopped": BOOL,
        "changes": JSON,
        "fusions": JSON,
        "curves": JSON,
        "task_losses": JSON,
    }
)
"""The server's state besides its arrays (models, confidence matrices) and the graph of its model."""


class FCMServer(ServerLogic):
    """Server logic of F-CMs and of its static, reinit and full-model variants.

    Each round: clients seen for the first time register (their concepts,
    cardinalities, sample count and confidence matrix); the server fuses the
    matrices of every client seen so far, prunes cycles and grows the model
    accordingly; then the round's clients train and upload the modules they
    have labels for, and each module is averaged over the clients that
    uploaded it, weighted by their sample counts. The validation task loss
    each client reports for the model it received drives early stopping and
    the choice of the best model, which is the one tested at the end.

    Parameters
    ----------
    task : ConceptTask
        The global test set and the task definition.
    params : FCMParams
        Method parameters.
    """

    def __init__(self, task: ConceptTask, params: FCMParams) -> None:
        self._task = task
        self._params = params
        self.initialize(0)

    @override
    def initialize(self, seed: int) -> None:
        self.seed = seed
        self.model_seed = 0
        self.model: ConceptModel | None = None
        self.registry: dict[int, dict[str, Any]] = {}
        self.confidences: dict[int, ConfidenceMatrix] = {}
        self.rejected: dict[int, str] = {}
        self.best: dict[str, np.ndarray] = {}
        self.best_graph = ""
        self.best_key: tuple[float, ...] | None = None
        self.best_round = 0
        self.bad_rounds = 0
        self.rounds_trained_since_change = 0
        self.stopped = False
        self.changes: list[dict[str, Any]] = []
        self.fusions: list[dict[str, Any]] = []
        self.curves: dict[str, Any] = {}
        self.task_losses: list[float] = []

    # -- the round -----------------------------------------------------------------

    @override
    def run_round(self, ctx: RoundContext) -> dict[str, float]:
        newcomers = [c for c in ctx.clients if c not in self.registry and c not in self.rejected]
        known = len(self.registry)
        if newcomers:
            replies = ctx.exchange(
                {c: Message(kind=REGISTER) for c in newcomers}, quorum=False, expect=self._registration_spec()
            )
            for client in sorted(replies):
                self._register(client, replies[client], ctx.round)
            self.rejected.update({c: ctx.rejected[c] for c in newcomers if c in ctx.rejected})
        # The fused graph changes only when the set of registered clients does.
        metrics = self._update_model(ctx.round) if len(self.registry) > known or self.model is None else {}
        model = self.model
        if model is None:
            raise QuorumNotMet("no client has registered yet")
        sent = model_to_arrays(model)
        graph_text = encode_graph(model.graph)
        needed = {c: self._needed(c, sent) for c in ctx.clients if c in self.registry}
        messages = {
            c: Message(kind=TRAIN, arrays=arrays, config={"graph": graph_text, "round": ctx.round})
            for c, arrays in needed.items()
        }
        averaged, replies = ctx.exchange_aggregated(
            messages, expect={c: self._training_spec(arrays) for c, arrays in needed.items()}, reference=sent
        )
        load_arrays(model, {**sent, **averaged})
        trained = {c: r for c, r in replies.items() if "train_loss" in r.metrics}
        scores = {
            "val_loss": _weighted_mean(replies, "val_loss", "val_examples"),
            "val_task_loss": _weighted_mean(replies, "val_task_loss", "val_task_examples"),
            "train_loss": _weighted_mean(trained, "train_loss", "num_examples"),
        }
        self._track(scores["val_task_loss"], scores["val_loss"], sent, graph_text, ctx.round)
        self.rounds_trained_since_change += bool(trained)
        metrics.update({key: value for key, value in scores.items() if value is not None})
        if ctx.secure is None:  # with secure aggregation the server cannot count them
            metrics["uploaded_tensors"] = float(sum(len(r.arrays) for r in trained.values()))
        spent = [r.metrics[DP_SGD_EPSILON] for r in trained.values() if DP_SGD_EPSILON in r.metrics]
        if spent:
            metrics[f"{DP_SGD_EPSILON}_max"] = max(spent)
        return metrics

    def _registration_spec(self) -> ReplySpec:
        """A registration: a valid confidence matrix over the client's concepts, its cardinalities and sample count."""
        return ReplySpec(
            arrays={"confidence": ArraySpec((None, None), "float64")},
            config=frozenset({"concepts", "confidence_names", "cardinalities"}),
            metrics=frozenset({"num_examples"}),
            kind=REGISTER,
            checks=(self._registration_problem,),
        )

    def _training_spec(self, sent: dict[str, np.ndarray]) -> ReplySpec:
        """A training reply: some of the modules ``sent`` (as sent), its sample counts, losses where due."""

        def problem(reply: Message) -> str | None:
            metrics = reply.metrics
            if reply.arrays and "train_loss" not in metrics:
                return "trained modules without train_loss"
            if metrics["val_examples"] > 0 and "val_loss" not in metrics:
                return "val_examples without val_loss"
            if metrics.get("val_task_examples", 0) > 0 and "val_task_loss" not in metrics:
                return "val_task_examples without val_task_loss"
            return None

        return ReplySpec.like(
            sent,
            metrics={"num_examples", "val_examples"},
            optional_metrics=frozenset(
                {"train_loss", "val_loss", "val_task_examples", "val_task_loss", DP_SGD_EPSILON}
            ),
            partial=True,
            kind=TRAIN,
            checks=(problem,),
        )

    def _registration_problem(self, reply: Message) -> str | None:
        try:
            self._parse_registration(reply)
        except (FedmosaicError, KeyError, ValueError, TypeError) as error:
            return str(error)
        return None

    def _parse_registration(self, reply: Message) -> tuple[dict[str, Any], ConfidenceMatrix]:
        """The registry entry and confidence matrix of a registration; FedmosaicError when invalid."""
        concepts = list(json.loads(str(reply.config["concepts"])))
        names = tuple(json.loads(str(reply.config["confidence_names"])))
        cardinalities = {str(k): int(v) for k, v in json.loads(str(reply.config["cardinalities"])).items()}
        matrix = ConfidenceMatrix(names, reply.arrays["confidence"])
        examples = float(reply.metrics["num_examples"])
        if not all(isinstance(c, str) for c in concepts):
            raise FedmosaicError("concepts must be names")
        if not set(names) <= set(concepts) | {self._task.task}:
            raise FedmosaicError(f"confidence matrix names {sorted(set(names) - set(concepts))} are not its concepts")
        if examples <= 0 or set(cardinalities) != set(concepts) or min(cardinalities.values(), default=2) < 2:
            raise FedmosaicError("sample count or cardinalities are invalid")
        known = self._known_cardinalities()
        conflicts = sorted(n for n, k in cardinalities.items() if known.get(n, k) != k)
        if conflicts:
            raise FedmosaicError(f"cardinalities of {conflicts} contradict those already known")
        entry = {
            "concepts": concepts,
            "confidence_names": list(matrix.names),
            "cardinalities": cardinalities,
            "num_examples": examples,
        }
        return entry, matrix

    def _register(self, client: int, reply: Message, rnd: int) -> None:
        try:
            entry, matrix = self._parse_registration(reply)
        except (FedmosaicError, KeyError, ValueError, TypeError) as error:
            # Valid on its own, but contradicting a client registered earlier in the same exchange.
            self.rejected[client] = str(error)
            return
        self.registry[client] = {**entry, "joined": rnd}
        self.confidences[client] = matrix

    def _update_model(self, rnd: int) -> dict[str, float]:
        if not self.registry:
            return {}
        graph = self._fused_graph(rnd)
        if self.model is None:
            self.model_seed = derive_seed(self.seed, "init")
            self.model = to_device(
                build_concept_model(self._task.input_dim, graph, self._params.model, seed=self.model_seed)
            )
            return {}
        if self._params.growth == "static" or encode_graph(graph) == encode_graph(self.model.graph):
            return {}
        if self._params.growth == "grow":
            report = self.model.adapt(graph)
            change: dict[str, Any] = {
                "round": rnd,
                "ratio": report.change_ratio,
                "growth_ratio": report.growth_ratio,
                "added": list(report.added_nodes),
                "rewired": list(report.rewired_nodes),
            }
        else:
            before = _count(self.model)
            self.model_seed = derive_seed(self.seed, "init", rnd)
            self.model = to_device(
                build_concept_model(self._task.input_dim, graph, self._params.model, seed=self.model_seed)
            )
            after = _count(self.model)
            change = {
                "round": rnd,
                "ratio": after / before,
                "growth_ratio": max(0, after - before) / before,
                "added": [],
                "rewired": list(graph.nodes),
            }
        self.changes.append(change)
        self.best_key, self.bad_rounds, self.rounds_trained_since_change = None, 0, 0
        return {"param_change_ratio": float(change["ratio"]), "param_growth_ratio": float(change["growth_ratio"])}

    def _known_cardinalities(self) -> dict[str, int]:
        task = self._task.task
        cardinalities = {task: int(self._task.cardinalities[task])}
        for entry in self.registry.values():
            cardinalities.update(entry["cardinalities"])
        return cardinalities

    def _fused_graph(self, rnd: int) -> ConceptGraph:
        task = self._task.task
        cardinalities = self._known_cardinalities()
        names = sorted(cardinalities)
        clients = sorted(self.registry)
        matrices = [self.confidences[c] for c in clients]
        weights = [self.registry[c]["num_examples"] for c in clients]
        dag, removed = aggregate_graph(names, matrices, weights, task)
        self.fusions.append({"round": rnd, **consensus_record(dag, removed)})
        parents = {n: tuple(sorted(src for src, dst in dag.edges if dst == n)) for n in names}
        return ConceptGraph(nodes=tuple(names), task=task, cardinalities=cardinalities, parents=parents)

    def _needed(self, client: int, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        model = self.model
        assert model is not None
        if self._params.aggregation == "full":
            return arrays
        labeled = [n for n in model.graph.nodes if n in self.registry[client]["concepts"]]
        prefixes = (model.ENCODER_PREFIX, *(model.node_prefix(n) for n in model.dependencies(labeled)))
        return {name: a for name, a in arrays.items() if name.startswith(prefixes)}

    def _track(
        self, task_loss: float | None, val_loss: float | None, sent: dict[str, np.ndarray], graph_text: str, rnd: int
    ) -> None:
        """Keep the model sent this round if it is the best so far, and count rounds without improvement.

        With ``selection = "task"`` the model is selected on the task: the
        clients' validation task loss (sample-weighted), ties broken by the
        whole validation loss (concepts included). With ``"loss"``, and
        whenever no registered client labels the task, the whole validation
        loss is the criterion. A round whose replies hold no
        validation rows for the criterion is ignored: it neither becomes the
        best nor counts towards the patience; so is a round whose model
        holds modules no client has trained yet: the initial model, whose
        near-uniform task predictions can score a lower cross-entropy than
        every trained model on a task the inputs barely predict, and the
        model sent in the round it grew or was rebuilt, whose new concept
        modules are at their initial values (after a growth the search for
        the best restarts, so that model would otherwise be the best until a
        trained one beats it, and the one tested if none does).
        """
        if task_loss is not None:
            self.task_losses.append(task_loss)
        on_task = self._params.selection == "task" and self._task_labeled()
        key = (task_loss, val_loss) if on_task else (val_loss,)
        if key[0] is None or not self.rounds_trained_since_change:
            return
        score = tuple(math.inf if value is None else value for value in key)
        if self.best_key is None or len(score) != len(self.best_key) or score < self.best_key:
            self.best_key, self.best, self.best_graph, self.best_round = score, sent, graph_text, rnd - 1
            self.bad_rounds = 0
        else:
            self.bad_rounds += 1
        patience = self._params.patience
        if patience and self.bad_rounds >= patience and rnd >= self._task.last_arrival:
            self.stopped = True

    @override
    def done(self) -> bool:
        return self.stopped

    # -- evaluation ----------------------------------------------------------------

    @override
    def evaluate(self, rnd: int) -> dict[str, float]:
        if self.model is None:
            return {}
        final = rnd >= self._task.rounds or self.stopped
        model = self._tested_model() if final else self.model
        scores = concept_scores(model, self._task.test, self._task.true_ancestors)
        metrics = {
            "accuracy": scores["task_accuracy"],
            **{key: scores[key] for key in CONCEPT_METRICS},
            "coverage": coverage(model.graph.nodes, self._task.task, self._task_labeled(), self._task.true_ancestors),
            "concepts": float(len(model.graph.nodes) - 1),
        }
        if final:
            metrics.update(self._final_metrics(model))
            self.curves["per_concept"] = scores["per_concept"]
        return metrics

    def _final_metrics(self, model: ConceptModel) -> dict[str, float]:
        task = self._task
        concepts = [n for n in model.graph.topological_order() if n != task.task]
        noise = derive_rng(self.seed, "intervention-noise").standard_normal(task.test.x.shape)
        noisy = LabeledConcepts(
            (task.test.x + self._params.intervention_noise * noise).astype(np.float32),
            task.test.values,
            task.test.names,
        )
        order = random_order(concepts, derive_rng(self.seed, "curve"))
        random_curve = intervention_curve(model, noisy, order)
        topological_curve = intervention_curve(model, noisy, concepts)
        by_never: dict[tuple[str, ...], float] = {}  # clients that label the same concepts share one pass
        unlabeled = []
        for entry in self.registry.values():
            never = tuple(n for n in concepts if n not in entry["concepts"])
            if never not in by_never:
                by_never[never] = task_accuracy(model, noisy, never)
            unlabeled.append(by_never[never])
        self.curves = {
            "random": random_curve,
            "topological": topological_curve,
            "random_clean": intervention_curve(model, task.test, order),
            "topological_clean": intervention_curve(model, task.test, concepts),
            "topological_order": concepts,
            "unlabeled_by_client_all_intervened": unlabeled,
            "changes": self.changes,
            "graph": json.loads(encode_graph(model.graph)),
            "rejected": {str(c): r for c, r in self.rejected.items()},
            "registry": {
                str(c): {"concepts": e["concepts"], "joined": e.get("joined", 1)} for c, e in self.registry.items()
            },
            **({"true_edges": [list(edge) for edge in task.true_edges]} if task.true_edges is not None else {}),
        }
        return {
            "full_intervention_accuracy": task_accuracy(model, task.test, concepts),
            "noisy_accuracy": topological_curve[0],
            "noisy_full_intervention_accuracy": topological_curve[-1],
            "intervention_gain": topological_curve[-1] - topological_curve[0],
            "unlabeled_intervention_accuracy": float(np.mean(unlabeled)) if unlabeled else 0.0,
            "best_round": float(self.best_round),
            **({"selection_loss": self.best_key[0]} if self.best_key else {}),
            "alternating_rounds": float(alternating_rounds(self.task_losses)),
            **({"graph_epsilon_per_pair": self._params.graph_epsilon} if self._params.graph_epsilon else {}),
            **{k: float(v) for k, v in task.extras.items()},
        }

    def _tested_model(self) -> ConceptModel:
        """The model the run ends with and tests: the selected one if any, else the current one."""
        assert self.model is not None
        return self._best_model() if self.best else self.model

    def _best_model(self) -> ConceptModel:
        model = to_device(
            build_concept_model(self._task.input_dim, decode_graph(self.best_graph), self._params.model, seed=0)
        )
        load_arrays(model, self.best)
        return model

    def _task_labeled(self) -> bool:
        return any(self._task.task in entry["concepts"] for entry in self.registry.values())

    @override
    def artifacts(self) -> dict[str, Any]:
        return {**self.curves, "fusions": self.fusions}

    def exported_model(self) -> ModelExport | None:
        """The tested model, with the consensus behind each edge of its graph."""
        if self.model is None:
            return None
        model = self._tested_model()
        graph = json.loads(encode_graph(model.graph))
        fusion = self._fusion_of(model.graph)
        return ModelExport(
            "concepts",
            {"input_dim": self._task.input_dim, "model": self._params.model.model_dump(mode="json"), "graph": graph},
            model_to_arrays(model),
            details={"edges": fusion["edges"], "removed_edges": fusion["removed"], "selected_round": self.best_round},
        )

    def _fusion_of(self, graph: ConceptGraph) -> dict[str, Any]:
        """The latest fusion that produced ``graph`` (its nodes and edges)."""
        edges = {(parent, node) for node in graph.nodes for parent in graph.parents[node]}
        for fusion in self.fusions[::-1]:  # latest first (reversed() of dicts with Any values is typed Any)
            if (
                set(fusion["nodes"]) == set(graph.nodes)
                and {(e["source"], e["target"]) for e in fusion["edges"]} == edges
            ):
                return fusion
        return {"edges": [], "removed": []}

    # -- checkpoints -----------------------------------------------------------------

    @override
    def state_dict(self) -> ClientState:
        arrays: dict[str, np.ndarray] = {}
        if self.model is not None:
            arrays.update({f"model/{k}": v for k, v in model_to_arrays(self.model).items()})
        arrays.update({f"best/{k}": v for k, v in self.best.items()})
        arrays.update({f"confidence/{c}": np.array(m.values) for c, m in self.confidences.items()})
        graph = encode_graph(self.model.graph) if self.model is not None else ""
        return ClientState(arrays=arrays, config={"graph": graph, **STATE.save(self)})

    @override
    def load_state_dict(self, state: ClientState) -> None:
        config = state.config
        STATE.load(self, config)
        self.confidences = {
            c: ConfidenceMatrix(tuple(entry["confidence_names"]), state.arrays[f"confidence/{c}"])
            for c, entry in self.registry.items()
        }
        self.best = {k.removeprefix("best/"): v for k, v in state.arrays.items() if k.startswith("best/")}
        self.model = None
        if config["graph"]:
            graph = decode_graph(str(config["graph"]))
            self.model = to_device(
                build_concept_model(self._task.input_dim, graph, self._params.model, seed=self.model_seed)
            )
            load_arrays(
                self.model, {k.removeprefix("model/"): v for k, v in state.arrays.items() if k.startswith("model/")}
            )


def _weighted_mean(replies: dict[int, Message], key: str, weight: str) -> float | None:
    """The ``weight``-weighted mean of ``key`` over the replies with a positive weight; None when there are none."""
    pairs = [(r.metrics[key], r.metrics[weight]) for r in replies.values() if r.metrics.get(weight, 0) > 0]
    if not pairs:
        return None
    values, weights = zip(*pairs, strict=True)
    return float(np.average(values, weights=weights))


def _count(model: ConceptModel) -> int:
    return sum(p.numel() for p in model.parameters())
