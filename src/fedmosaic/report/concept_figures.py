"""The F-CMs part of a report: the fused graph against the truth, who labels what, interventions."""

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from fedmosaic.report import concept_plots, plots
from fedmosaic.report.document import Block, Heading, Paragraph, plot_image
from fedmosaic.report.graphs import EDGE_STATUSES, Edge, compare_edges, edges_of

if TYPE_CHECKING:
    from pgmpy.models import DiscreteBayesianNetwork


def graph_run(results: Mapping[str, Any]) -> dict[str, Any] | None:
    """The run whose fused graph the report shows: the first federated run with a graph, else any run with one."""
    with_graph: list[dict[str, Any]] = [
        run for run in results["runs"] if isinstance((run.get("artifacts") or {}).get("graph"), Mapping)
    ]
    federated = [run for run in with_graph if run["setting"] == "federated"]
    chosen = federated or with_graph
    return chosen[0] if chosen else None


def true_network(config: Mapping[str, Any]) -> "DiscreteBayesianNetwork | None":
    """The network the data were sampled from (bnlearn datasets), else None."""
    data = config.get("data", {})
    if data.get("dataset") != "bnlearn" or not data.get("network"):
        return None
    from fedmosaic.data.bayesnet import load_network

    return load_network(data["network"])


def true_edges(run: Mapping[str, Any], config: Mapping[str, Any]) -> list[Edge] | None:
    """The true graph's edges when the data come from a known network (bnlearn), else None.

    A run records them (``true_edges`` in its artifacts); for results written before runs
    did, they are read from the network the configuration names.
    """
    edges = (run.get("artifacts") or {}).get("true_edges")
    if edges is None:
        network = true_network(config)
        if network is None:
            return None
        edges = network.edges()
    return sorted((str(a), str(b)) for a, b in edges)


def consensus_scores(fusions: Sequence[Mapping[str, Any]], parents: Mapping[str, Sequence[str]]) -> dict[Edge, float]:
    """The consensus score of each edge, from the last fusion that gave exactly this graph's edges (empty if none).

    Examples
    --------
    >>> fusions = [{"edges": [{"source": "a", "target": "b", "score": 0.5}]}]
    >>> consensus_scores(fusions, {"a": [], "b": ["a"]})
    {('a', 'b'): 0.5}
    """
    wanted = set(edges_of(parents))
    for fusion in reversed(fusions):
        scores = {(e["source"], e["target"]): float(e["score"]) for e in fusion.get("edges", [])}
        if set(scores) == wanted:
            return scores
    return {}


def concept_sections(results: Mapping[str, Any]) -> list[Block]:
    """Sections of an F-CMs report: the fused graph, the client × concept matrix, the intervention curves.

    Each appears only when the runs recorded what it needs (``graph``,
    ``registry``, ``topological`` in their artifacts).

    Parameters
    ----------
    results : Mapping[str, Any]
        Content of ``results.json``.

    Returns
    -------
    list[Block]
        Headings, paragraphs and images, in reading order.
    """
    blocks: list[Block] = []
    run = graph_run(results)
    if run is not None:
        graph = run["artifacts"]["graph"]
        marks = compare_edges(graph["parents"], true_edges(run, results["config"]))
        scores = consensus_scores(run["artifacts"].get("fusions", []), graph["parents"])
        numbers = "; numbers: the clients' consensus behind each edge" if scores else ""
        blocks += [
            Heading("Fused concept graph"),
            Paragraph(_edge_summary(run["name"], marks)),
            plot_image(
                "fused_graph",
                f"fused concept graph of {run['name']} as a DAG, edges marked against the true network{numbers}",
                concept_plots.fused_graph(graph["parents"], marks, graph["task"], scores),
            ),
        ]
        registry = run["artifacts"].get("registry")
        if registry:
            blocks += [
                Heading("Who labels what"),
                plot_image(
                    "client_concepts",
                    f"client × concept matrix of {run['name']}: a cell is filled where the client labels the concept",
                    concept_plots.client_concepts(registry, graph["nodes"]),
                ),
            ]
    if any("topological" in (r.get("artifacts") or {}) for r in results["runs"]):
        blocks += [
            Heading("Interventions"),
            plot_image(
                "interventions",
                "task accuracy as more concepts are set to their true value, noisy and clean inputs, "
                "with the Bayes ceiling",
                plots.intervention_curves(results),
            ),
        ]
    return blocks


def _edge_summary(run: str, marks: Mapping[Edge, str]) -> str:
    counts = Counter(marks.values())
    if counts.get("unknown"):
        return f"The graph {run} learned ({counts['unknown']} edges); the true network is not known."
    found = ", ".join(f"{counts[status]} {status}" for status in EDGE_STATUSES if counts.get(status))
    return (
        f"The graph {run} learned, against the true network's edges between the same concepts: {found or 'no edges'}."
    )
