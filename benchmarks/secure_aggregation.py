"""Secure aggregation against plain uploads: final metrics, bytes and CPU per round.

Two presets on the in-process engine with one worker (clients run in the
calling process, so their CPU time can be told from the server's):

* ``digits-fedavg``'s FedAvg run (10 clients, 30 rounds), and the same run
  with SCAFFOLD (whose control variate changes are summed unweighted in the
  same masked vector) and with FedMix (whose shared means stay in the
  clear), each with its default parameters;
* ``fcm-asia``'s F-CMs run (20 clients, 10 joining at round 10, 60 rounds),
  whose plain clients upload only the modules they trained and whose secure
  clients upload every module masked, with a weight per tensor.

Each runs once plain and once with ``aggregation.secure = true``. Bytes are
the federation's counts (``Message.nbytes``) per round; client CPU is the
process time spent inside the clients' ``handle`` (training included, the
protocol's keys, shares and masks too), server CPU the rest of the round.

Usage: python benchmarks/secure_aggregation.py [--rounds N] [--work DIR] [--out FILE] [--markdown FILE]
"""

from __future__ import annotations

import argparse
import copy
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _common import emit, machine

from fedmosaic.experiments import runner
from fedmosaic.experiments.config import load_config
from fedmosaic.experiments.presets import preset_source
from fedmosaic.federation import ClientContext, ClientLogic, ClientState, Message

COMPARED = (
    ("digits-fedavg", "FedAvg", None),
    ("digits-fedavg", "FedAvg", ("SCAFFOLD", "scaffold")),
    ("digits-fedavg", "FedAvg", ("FedMix", "fedmix")),
    ("fcm-asia", "F-CMs", None),
)
"""The preset, its run compared, and the name and method that replace the run's (None: the run as it is)."""
COMMAND = "python benchmarks/secure_aggregation.py --out docs/results/secure-aggregation.json --markdown docs/results/secure-aggregation.md"


class Timed(ClientLogic):
    """Adds the process time the wrapped client spends handling messages to a shared counter."""

    spent = 0.0

    def __init__(self, logic: ClientLogic) -> None:
        self._logic = logic

    def handle(self, message: Message, state: ClientState, context: ClientContext) -> Message:
        began = time.process_time()
        try:
            return self._logic.handle(message, state, context)
        finally:
            Timed.spent += time.process_time() - began

    def exported_part(self, state: ClientState) -> Any:
        return self._logic.exported_part(state)


def timed(client: Callable[..., ClientLogic]) -> Callable[..., ClientLogic]:
    """The runner's client builder, each client wrapped in :class:`Timed` (outside secure aggregation's wrapper)."""
    return lambda *args: Timed(client(*args))


def measure(
    preset: str, run: str, replaced: tuple[str, str] | None, secure: bool, rounds: int | None, work: Path
) -> dict[str, Any]:
    """One run of ``preset``'s run ``run`` (renamed and with another method where ``replaced``), plain or secure."""
    source = copy.deepcopy(preset_source(preset))
    swap = dict(zip(("name", "method"), replaced, strict=True)) if replaced else {}
    source["runs"] = [r | swap for r in source["runs"] if r["name"] == run]
    source["federation"] = {**source.get("federation", {}), "workers": 1, **({"rounds": rounds} if rounds else {})}
    source["aggregation"] = {"secure": secure}
    Timed.spent = 0.0
    began, cpu = time.perf_counter(), time.process_time()
    results = runner.run_experiment(
        load_config(source), work / f"{preset}-{source['runs'][0]['name']}-{secure}", overwrite=True
    )
    total_cpu = time.process_time() - cpu
    entry = results["runs"][0]
    history = [row for row in entry["history"] if row["status"] == "ok"]
    count = len(history)
    rounds_wall = sum(row["wall_time_s"] for row in entry["history"])  # the rounds, evaluation included
    return {
        "final": {k: v for k, v in entry["final"].items() if "accuracy" in k},
        "rounds_ok": count,
        "bytes_up_per_round": sum(row["bytes_up"] for row in history) / count,
        "bytes_down_per_round": sum(row["bytes_down"] for row in history) / count,
        "client_cpu_s_per_round": Timed.spent / count,
        "server_cpu_s_per_round": (total_cpu - Timed.spent) / count,
        "rounds_wall_s": rounds_wall,
        "wall_s": time.perf_counter() - began,
    }


def compare(preset: str, run: str, replaced: tuple[str, str] | None, rounds: int | None, work: Path) -> dict[str, Any]:
    """Plain and secure runs side by side, with the largest accuracy difference in points."""
    plain = measure(preset, run, replaced, False, rounds, work)
    secure = measure(preset, run, replaced, True, rounds, work)
    gaps = [abs(secure["final"][k] - v) * 100 for k, v in plain["final"].items() if k in secure["final"]]
    return {
        "preset": preset,
        "run": replaced[0] if replaced else run,
        "plain": plain,
        "secure": secure,
        "max_accuracy_gap_points": max(gaps),
    }


def markdown(document: dict[str, Any]) -> str:
    """The results page."""
    lines = [
        "# Secure aggregation: cost and agreement",
        "",
        f"Produced by `{COMMAND}` (in-process engine, one worker, seed 0). "
        "Plain: each client uploads its arrays in the clear (F-CMs: only the modules it trained). "
        "SCAFFOLD and FedMix are digits-fedavg's FedAvg run with their method and its default parameters: "
        "SCAFFOLD's control variate changes go in the masked vector, summed unweighted; "
        "FedMix's shared means stay in the clear in both. "
        "Secure: `aggregation.secure = true`, every sampled client uploads all averaged arrays as masked 64-bit "
        "integers plus one weight per tensor, after two key exchanges, and answers one unmasking request. "
        "Client CPU is the time inside the clients, summed over a round's clients (training included); "
        "server CPU is the rest of the process "
        "(aggregation, evaluation, protocol). Per round means over the rounds that aggregated; "
        "the largest gap is over every final accuracy the run reports (task and concepts).",
        "",
        "| preset | run | aggregation | KiB up / round | KiB down / round | client CPU s / round | server CPU s / round | final accuracy | largest gap (points) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in document["results"]:
        for label in ("plain", "secure"):
            m = row[label]
            accuracy = m["final"].get("accuracy", m["final"].get("task_accuracy", next(iter(m["final"].values()))))
            gap = f"{row['max_accuracy_gap_points']:.2f}" if label == "secure" else ""
            lines.append(
                f"| {row['preset']} | {row['run']} | {label} | {m['bytes_up_per_round'] / 1024:.1f} | "
                f"{m['bytes_down_per_round'] / 1024:.1f} | {m['client_cpu_s_per_round']:.3f} | "
                f"{m['server_cpu_s_per_round']:.3f} | {100 * accuracy:.1f} | {gap} |"
            )
    for row in document["results"]:
        up = row["secure"]["bytes_up_per_round"] / row["plain"]["bytes_up_per_round"]
        down = row["secure"]["bytes_down_per_round"] / row["plain"]["bytes_down_per_round"]
        lines.append("")
        lines.append(f"{row['preset']}, {row['run']}: secure uploads {up:.2f}x the plain bytes, downloads {down:.2f}x.")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=None, help="override the presets' rounds (a quicker check)")
    parser.add_argument("--work", type=Path, default=None, help="folder for the runs' outputs (default: temporary)")
    parser.add_argument("--out", type=Path, default=None, help="also write the JSON here")
    parser.add_argument("--markdown", type=Path, default=None, help="also write the results page here")
    args = parser.parse_args()
    runner._client = timed(runner._client)  # type: ignore[assignment]  # the clients' CPU, counted apart
    with tempfile.TemporaryDirectory() as scratch:
        work = args.work or Path(scratch)
        document = {
            "machine": machine(),
            "command": COMMAND,
            "results": [compare(preset, run, replaced, args.rounds, work) for preset, run, replaced in COMPARED],
        }
    emit(document, args.out)
    if args.markdown is not None:
        args.markdown.write_text(markdown(document))


if __name__ == "__main__":
    main()
