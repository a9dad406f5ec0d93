"""Speed of the F-CMs server-side graph fusion (fuse + prune cycles) on hailfinder.

Builds 100 clients on pgmpy's hailfinder network (56 nodes, 66 edges): each
holds a random subset of 10-30 nodes and reports the true DAG restricted to
them, with 10% of its pairs perturbed (set to another of "i -> j", "j -> i",
"no edge"), weighted by a random sample size. Times `aggregate_graph` with the
task R5Fcst over many repetitions after a warm-up and prints the median and
95th percentile (target: median under 5 ms), plus how well the true edges were
recovered.

Usage: python benchmarks/graph_fusion.py [--clients 100] [--repeats 200] [--seed 0] [--out FILE]
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
from _common import emit, machine

from fedmosaic.methods.concepts.graph import ConfidenceMatrix, aggregate_graph

NETWORK, TASK = "hailfinder", "R5Fcst"
TARGET_MS = 5.0


def load_network() -> tuple[list[str], list[tuple[str, str]]]:
    """Nodes (sorted) and edges of the pgmpy example network."""
    from pgmpy.utils import get_example_model

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # deprecated alias, same bundled file
        model = get_example_model(NETWORK)
    return sorted(model.nodes()), list(model.edges())


def perturbed_matrix(
    names: list[str], edges: list[tuple[str, str]], fraction: float, rng: np.random.Generator
) -> ConfidenceMatrix:
    """The DAG restricted to ``names`` with ``fraction`` of its pairs set to another state."""
    values = ConfidenceMatrix.from_dag(names, edges).values.copy()
    rows, cols = np.triu_indices(len(names), k=1)
    for p in rng.choice(rows.size, size=round(fraction * rows.size), replace=False):
        i, j = rows[p], cols[p]
        state = 0 if values[i, j] else 1 if values[j, i] else 2  # i -> j, j -> i, none
        new = (state + rng.integers(1, 3)) % 3
        values[i, j], values[j, i] = float(new == 0), float(new == 1)
    return ConfidenceMatrix(tuple(names), values)


def build_clients(
    nodes: list[str], edges: list[tuple[str, str]], clients: int, rng: np.random.Generator
) -> tuple[list[ConfidenceMatrix], list[float]]:
    """Random node subsets of size 10-30, 10% of pairs perturbed, random sample sizes."""
    matrices = [
        perturbed_matrix(list(rng.choice(nodes, size=int(rng.integers(10, 31)), replace=False)), edges, 0.1, rng)
        for _ in range(clients)
    ]
    return matrices, rng.integers(100, 2000, size=clients).astype(float).tolist()


def recovery(dag_edges: list[tuple[str, str]], matrices: list[ConfidenceMatrix], edges: list[tuple[str, str]]) -> dict:
    """True edges on pairs some client holds, and how many of them the fused DAG has."""
    held = [set(m.names) for m in matrices]
    reachable = {e for e in edges if any(e[0] in h and e[1] in h for h in held)}
    found = set(dag_edges)
    return {"true_edges_held": len(reachable), "recovered": len(found & reachable), "spurious": len(found - reachable)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    nodes, edges = load_network()
    matrices, weights = build_clients(nodes, edges, args.clients, np.random.default_rng(args.seed))
    for _ in range(20):  # warm-up
        dag, removed = aggregate_graph(nodes, matrices, weights, TASK)
    times_ms = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        aggregate_graph(nodes, matrices, weights, TASK)
        times_ms.append((time.perf_counter() - start) * 1e3)
    emit(
        {
            "benchmark": "graph_fusion",
            "network": NETWORK,
            "nodes": len(nodes),
            "clients": args.clients,
            "repeats": args.repeats,
            "median_ms": round(float(np.median(times_ms)), 3),
            "p95_ms": round(float(np.percentile(times_ms, 95)), 3),
            "target_ms": TARGET_MS,
            "edges_removed_by_pruning": len(removed),
            "quality": recovery(dag.edges, matrices, edges),
            "machine": machine(),
        },
        args.out,
    )


if __name__ == "__main__":
    main()
