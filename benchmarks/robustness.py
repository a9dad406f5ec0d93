"""Adversarial table: hostile clients against validation, robust aggregation and F-CMs' graph fusion.

On the in-process engine, a share (0%, 10%, 30%, 45%) of the clients is
hostile (``[attack]``, drawn from the seed):

* FedAvg on scikit-learn's digits (10 clients, IID, MLP 64-32-10, 30 rounds)
  with (b) sign-flipped or x100 updates and (c) malformed replies (NaN, Inf,
  wrong shapes, unknown names, oversized payloads, one kind per client), for
  each aggregator: mean, coordinate-wise median, trimmed mean (0.3), mean of
  per-module norm-bounded updates (3.0). Final accuracy, and for (c) whether the
  run equals the clean run with the hostile clients simply absent.
* F-CMs on asia (20 clients, 10 joining at round 10, 30 rounds) with (a)
  reversed or random confidence matrices, and sign-flipped module updates
  under the mean and the median: final accuracy and the fused graph against
  the clean run's (edges added or lost).

With ``--privacy``, also the F-CMs privacy-utility table: randomized response
on the local graphs (epsilon per concept pair) and client-level DP on the
module updates (the noise that spends epsilon over the rounds), epsilon in
{inf, 8, 4, 2, 1}.

Usage: python benchmarks/robustness.py [--privacy] [--work DIR] [--out FILE] [--markdown FILE]
"""

from __future__ import annotations

import argparse
import copy
import math
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import emit, machine

from fedmosaic.experiments.config import load_config
from fedmosaic.experiments.runner import run_experiment
from fedmosaic.federation import hostile_clients

FRACTIONS = (0.0, 0.1, 0.3, 0.45)
AGGREGATORS = {
    "mean": {"rule": "mean"},
    "median": {"rule": "median"},
    "trimmed mean 0.3": {"rule": "trimmed-mean", "trim": 0.3},
    "norm-bounded 3.0": {"rule": "mean", "clip_norm": 3.0},
}
DIGITS: dict[str, Any] = {
    "name": "robust-digits",
    "seed": 0,
    "data": {"dataset": "digits"},
    "partition": {"scheme": "iid", "num_clients": 10, "min_size": 20},
    "federation": {"rounds": 30},
    "model": {"hidden": [64, 32]},
    "train": {"epochs": 2, "batch_size": 16, "optimizer": "adam", "lr": 0.05},
    "runs": [{"name": "FedAvg", "method": "fedavg"}],
}
ASIA: dict[str, Any] = {
    "name": "robust-asia",
    "seed": 0,
    "data": {"dataset": "bnlearn", "network": "asia"},
    "concepts": {"num_clients": 20, "initial_clients": 10, "join_round": 10},
    "federation": {"rounds": 30},
    "train": {"epochs": 2, "batch_size": 512, "optimizer": "adam", "lr": 0.01},
    "runs": [{"name": "F-CMs", "method": "fcm", "params": {"model": {"family": "cbm"}}}],
}
PRIVACY_EPSILONS = (math.inf, 8.0, 4.0, 2.0, 1.0)


def run(base: dict[str, Any], work: Path, label: str, **sections: Any) -> dict[str, Any]:
    """One experiment: ``base`` with ``sections`` replaced; its only run's results."""
    source = copy.deepcopy(base)
    for key, value in sections.items():
        if isinstance(value, dict) and isinstance(source.get(key), dict):
            source[key] = {**source[key], **value}
        else:
            source[key] = value
    began = time.perf_counter()
    results = run_experiment(load_config(source), work / label, overwrite=True)
    entry = results["runs"][0]
    entry["seconds"] = time.perf_counter() - began
    return entry


def edges(entry: dict[str, Any]) -> set[tuple[str, str]]:
    """The final (fused) graph's edges of an F-CMs run."""
    graph = entry["artifacts"]["graph"]
    return {(p, child) for child, parents in graph["parents"].items() for p in parents}


def rejected(entry: dict[str, Any]) -> int:
    """Replies dropped by validation over the run."""
    return sum(len(row.get("rejected", {})) for row in entry["history"])


def classification(work: Path) -> list[dict[str, Any]]:
    rows = []
    clean = {
        name: run(DIGITS, work, f"digits-clean-{i}", aggregation=agg)
        for i, (name, agg) in enumerate(AGGREGATORS.items())
    }
    for name, entry in clean.items():
        rows.append(
            {
                "attack": "none",
                "fraction": 0.0,
                "aggregator": name,
                "accuracy": entry["final"]["accuracy"],
                "rejected": 0,
            }
        )
    for attack in ("sign-flip", "scale", "malformed"):
        for fraction in FRACTIONS[1:]:
            hostile = sorted(hostile_clients(DIGITS["partition"]["num_clients"], fraction, DIGITS["seed"]))
            for i, (name, agg) in enumerate(AGGREGATORS.items()):
                label = f"digits-{attack}-{fraction}-{i}"
                entry = run(DIGITS, work, label, aggregation=agg, attack={"fraction": fraction, "kind": attack})
                row = {
                    "attack": attack,
                    "fraction": fraction,
                    "aggregator": name,
                    "hostile": hostile,
                    "accuracy": entry["final"]["accuracy"],
                    "clean_accuracy": clean[name]["final"]["accuracy"],
                    "rejected": rejected(entry),
                }
                if attack == "malformed":
                    failures = [{"clients": hostile, "round": r} for r in range(1, DIGITS["federation"]["rounds"] + 1)]
                    absent = run(DIGITS, work, label + "-absent", aggregation=agg, federation={"failures": failures})
                    row["equals_clean_without_them"] = _metrics(absent) == _metrics(entry)
                rows.append(row)
    return rows


def _metrics(entry: dict[str, Any]) -> list[dict[str, float]]:
    return [row["metrics"] for row in entry["history"]]


def concepts(work: Path) -> list[dict[str, Any]]:
    clean = run(ASIA, work, "asia-clean")
    truth = edges(clean)
    rows = [
        {
            "attack": "none",
            "fraction": 0.0,
            "aggregator": "mean",
            "accuracy": clean["final"]["accuracy"],
            "added": 0,
            "lost": 0,
            "rejected": 0,
        }
    ]
    cases = [(a, f, "mean") for a in ("reversed-graph", "random-graph") for f in FRACTIONS[1:]]
    cases += [("sign-flip", f, agg) for f in (0.1, 0.3) for agg in ("mean", "median")]
    for attack, fraction, name in cases:
        entry = run(
            ASIA,
            work,
            f"asia-{attack}-{fraction}-{name}",
            aggregation=AGGREGATORS[name],
            attack={"fraction": fraction, "kind": attack},
        )
        found = edges(entry)
        rows.append(
            {
                "attack": attack,
                "fraction": fraction,
                "aggregator": name,
                "accuracy": entry["final"]["accuracy"],
                "clean_accuracy": clean["final"]["accuracy"],
                "added": len(found - truth),
                "lost": len(truth - found),
                "rejected": rejected(entry),
            }
        )
    return rows


def privacy(work: Path) -> list[dict[str, Any]]:
    clean = run(ASIA, work, "asia-private-clean")
    truth = edges(clean)
    rows = []
    for epsilon in PRIVACY_EPSILONS:
        for mechanism in ("randomized response on graphs", "client-level DP on modules"):
            if math.isinf(epsilon):
                entry = clean
            elif mechanism.startswith("randomized"):
                params = {**ASIA["runs"][0]["params"], "graph_epsilon": epsilon}
                entry = run(
                    ASIA, work, f"asia-rr-{epsilon}", runs=[{"name": "F-CMs", "method": "fcm", "params": params}]
                )
            else:
                entry = run(ASIA, work, f"asia-dp-{epsilon}", privacy={"target_epsilon": epsilon, "clip_norm": 1.0})
            found = edges(entry)
            spent = [row["metrics"].get("dp_epsilon") for row in entry["history"] if "dp_epsilon" in row["metrics"]]
            rows.append(
                {
                    "epsilon": epsilon,
                    "mechanism": mechanism,
                    "accuracy": entry["final"]["accuracy"],
                    "added": len(found - truth),
                    "lost": len(truth - found),
                    "epsilon_spent": spent[-1] if spent else None,
                }
            )
    return rows


def markdown(document: dict[str, Any]) -> str:
    lines = [
        "# Robustness and privacy results",
        "",
        "Produced by `python benchmarks/robustness.py --privacy --out docs/results/robustness.json --markdown docs/results/robustness.md` "
        "(in-process engine, seed 0; timings are not compared here). Hostile clients are drawn from the seed "
        "(`[attack]`); accuracies are final test accuracies.",
        "",
        "Secure aggregation's cost (bytes and CPU per round against plain uploads, FedAvg on digits and F-CMs on "
        "asia) and its agreement with the plain runs are on their own page: "
        "[secure-aggregation.md](secure-aggregation.md).",
        "",
        "## FedAvg on digits: hostile updates and malformed replies",
        "",
        "10 clients (IID), MLP 64-32-10, 2 local epochs of Adam per round, 30 rounds. (b) sign-flip: the update is reversed; scale: multiplied by 100. "
        "(c) malformed: NaN, Inf, a wrong shape, an unknown name or an oversized payload (one kind per hostile client); "
        "validation drops them all, and the last column says whether the run is identical to the clean run with those "
        "clients absent.",
        "",
        "| attack | hostile | " + " | ".join(AGGREGATORS) + " | dropped replies | identical to absent |",
        "|---|---|" + "---|" * len(AGGREGATORS) + "---|---|",
    ]
    rows = document["classification"]
    for attack in ("none", "sign-flip", "scale", "malformed"):
        for fraction in FRACTIONS:
            cells = [r for r in rows if r["attack"] == attack and r["fraction"] == fraction]
            if not cells:
                continue
            accuracy = " | ".join(f"{100 * r['accuracy']:.1f}" for r in cells)
            dropped = max(r["rejected"] for r in cells)
            same = (
                ""
                if attack != "malformed"
                else ("yes" if all(r.get("equals_clean_without_them") for r in cells) else "no")
            )
            lines.append(f"| {attack} | {100 * fraction:.0f}% | {accuracy} | {dropped} | {same} |")
    lines += [
        "",
        "## F-CMs on asia: hostile graphs and updates",
        "",
        "20 clients (10 join at round 10), CBM, 30 rounds. reversed-graph: every believed edge sent the other way; "
        "random-graph: random beliefs; sign-flip: reversed module updates. Added / lost: edges of the final fused graph "
        "not in, or missing from, the clean run's.",
        "",
        "| attack | hostile | aggregator | accuracy | clean accuracy | edges added | edges lost |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in document["concepts"]:
        clean = r.get("clean_accuracy", r["accuracy"])
        lines.append(
            f"| {r['attack']} | {100 * r['fraction']:.0f}% | {r['aggregator']} | {100 * r['accuracy']:.1f} | "
            f"{100 * clean:.1f} | {r['added']} | {r['lost']} |"
        )
    if document.get("privacy"):
        lines += [
            "",
            "## F-CMs on asia: privacy and utility",
            "",
            "Randomized response: each client reports each concept pair's state (edge one way, the other, none) with "
            "epsilon-local DP per pair. Client-level DP: per-module clipping of each update (whole norm 1), Gaussian "
            "noise chosen by Opacus to spend epsilon (delta 1e-5) over the 30 rounds; `spent` is the RDP accountant's "
            "epsilon at the end (fewer rounds are run when early stopping ends the run).",
            "",
            "| epsilon | mechanism | accuracy | edges added | edges lost | spent |",
            "|---|---|---|---|---|---|",
        ]
        for r in document["privacy"]:
            spent = "" if r["epsilon_spent"] is None else f"{r['epsilon_spent']:.2f}"
            lines.append(
                f"| {r['epsilon']} | {r['mechanism']} | {100 * r['accuracy']:.1f} | {r['added']} | {r['lost']} | {spent} |"
            )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--privacy", action="store_true", help="also the F-CMs privacy-utility table")
    parser.add_argument("--work", type=Path, default=None, help="folder of the runs (default: a temporary one)")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--markdown", type=Path, default=None)
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="robustness-"))
    began = time.perf_counter()
    document: dict[str, Any] = {
        "benchmark": "robustness",
        "classification": classification(work),
        "concepts": concepts(work),
    }
    if args.privacy:
        document["privacy"] = privacy(work)
    document["seconds"] = round(time.perf_counter() - began, 1)
    document["machine"] = machine()
    emit(document, args.out)
    if args.markdown is not None:
        args.markdown.write_text(markdown(document))


if __name__ == "__main__":
    main()
