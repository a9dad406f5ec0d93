"""The four families of concept-based models (CBM, CEM, CGM, C2BM): which module each node of a graph gets."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import ClassVar

from fedmosaic.methods.concepts.blocks import (
    EmbeddingHead,
    MLPHead,
    NodeBlock,
    NodeSpec,
    ScoredEmbeddingHead,
    WeightGenerator,
)
from fedmosaic.methods.concepts.concept_graph import ConceptGraph
from fedmosaic.methods.concepts.model_params import ConceptModelParams
from fedmosaic.methods.concepts.slots import Slot


class Family(ABC):
    """Which module each node of a graph gets in one model family."""

    def __init__(self, params: ConceptModelParams) -> None:
        self.params = params

    @abstractmethod
    def block(self, node: str, graph: ConceptGraph) -> type[NodeBlock]:
        """The module class of ``node``."""

    @abstractmethod
    def spec(self, node: str, graph: ConceptGraph) -> NodeSpec:
        """The module of ``node``."""

    def encoding_slots(self) -> tuple[Slot]:
        """The slots of a node read from the encoding alone."""
        return (Slot(None, self.params.encoder_hidden),)

    def input_slots(self, sources: Iterable[str], graph: ConceptGraph) -> tuple[Slot, ...]:
        """One slot per source node, as wide as its message."""
        return tuple(
            Slot(source, self.block(source, graph).message_width(graph.cardinalities[source], self.params))
            for source in sources
        )


class _Bottleneck(Family):
    """CBM and CEM: concepts from the encoding, the task decoded from every concept."""

    concept_block: ClassVar[type[NodeBlock]]

    def block(self, node: str, graph: ConceptGraph) -> type[NodeBlock]:
        return MLPHead if node == graph.task else self.concept_block

    def spec(self, node: str, graph: ConceptGraph) -> NodeSpec:
        card = graph.cardinalities[node]
        if node != graph.task:
            return NodeSpec(self.concept_block, card, self.encoding_slots())
        concepts = [concept for concept in graph.nodes if concept != graph.task]
        hidden = (self.params.decoder_hidden,) if self.params.decoder == "mlp" else ()
        return NodeSpec(MLPHead, card, self.input_slots(concepts, graph), hidden)


class _CBM(_Bottleneck):
    concept_block = ScoredEmbeddingHead


class _CEM(_Bottleneck):
    concept_block = EmbeddingHead


class _Causal(Family):
    """CGM and C2BM: roots from the encoding, every other node from its parents."""

    root_block: ClassVar[type[NodeBlock]]
    child_block: ClassVar[type[NodeBlock]]

    def block(self, node: str, graph: ConceptGraph) -> type[NodeBlock]:
        return self.child_block if graph.parents[node] else self.root_block

    def spec(self, node: str, graph: ConceptGraph) -> NodeSpec:
        parents = graph.parents[node]
        slots = self.input_slots(parents, graph) if parents else self.encoding_slots()
        return NodeSpec(self.block(node, graph), graph.cardinalities[node], slots)


class _CGM(_Causal):
    root_block = EmbeddingHead
    child_block = EmbeddingHead


class _C2BM(_Causal):
    root_block = MLPHead
    child_block = WeightGenerator


FAMILIES: dict[str, type[Family]] = {"cbm": _CBM, "cem": _CEM, "cgm": _CGM, "c2bm": _C2BM}
