"""A seeded campaign of fault schedules over a local deployment with TLS and node keys.

Each schedule is drawn from its seed: a workload (FedAvg on digits, F-CMs on
asia, PlugVFL on the vertical example's three parties' tables), the round
after which it is interrupted, and the SuperNodes killed then (SIGKILL, none
to all of the run's). At that point (the run held after the round,
checkpointed, the next round not yet sent: :mod:`fedmosaic.experiments.hold`)
the chosen SuperNodes are killed and the run is stopped (``flwr stop``: its
ServerApp goes); the killed nodes are started again with only the client
states on their own disk, and the run is resumed. Its final metrics and
every round's record (wall times aside) must equal the uninterrupted run's,
run in process.

Faults not yet scheduled: the SuperLink killed, a node coming back after its
round timed out, a full disk while checkpointing (in process,
``tests/test_hostile_inputs.py`` refuses it on one line naming the file).

Usage: python benchmarks/faults.py [--schedules 20] [--first-seed 0] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
from _common import emit, machine

from fedmosaic.deploy.processes import LocalDeployment
from fedmosaic.deploy.submit import submit
from fedmosaic.errors import FedmosaicError
from fedmosaic.examples import copy_examples
from fedmosaic.experiments.config import load_config
from fedmosaic.experiments.hold import when_held
from fedmosaic.experiments.outputs import first_difference
from fedmosaic.experiments.presets import resolve_experiment
from fedmosaic.experiments.runner import run_experiment

ROUNDS = 3
NODES = 4
"""SuperNodes of the deployment: F-CMs on asia needs 4 clients; FedAvg uses 3, PlugVFL the 2 passive parties."""
FLOWER = {"rounds": ROUNDS, "engine": "flower", "reply_timeout_s": 120.0}


def workloads(examples: Path) -> dict[str, tuple[dict[str, Any], int]]:
    """Each workload's experiment and the number of SuperNodes its run uses."""
    vertical = resolve_experiment(str(examples / "vertical" / "vertical.toml"))
    return {
        "fedavg": (
            {
                "name": "faults-fedavg",
                "seed": 3,
                "data": {"dataset": "digits"},
                "partition": {"scheme": "dirichlet", "num_clients": 3, "alpha": 0.5, "min_size": 20},
                "federation": FLOWER,
                "model": {"hidden": [16]},
                "runs": [{"name": "FedAvg", "method": "fedavg"}],
            },
            3,
        ),
        "fcm": (
            {
                "name": "faults-fcm",
                "data": {"dataset": "bnlearn", "network": "asia", "samples": 2000},
                "concepts": {"num_clients": 4, "initial_clients": 3, "join_round": 2},
                "federation": FLOWER,
                "train": {"epochs": 1, "batch_size": 256, "optimizer": "adam", "lr": 0.01},
                "runs": [{"name": "F-CMs", "method": "fcm", "params": {"model": {"family": "cbm"}}}],
            },
            4,
        ),
        "plug-vfl": (vertical | {"federation": FLOWER, "runs": [{"name": "PlugVFL", "method": "plug-vfl"}]}, 2),
    }


def schedule(seed: int, names: list[str], nodes: dict[str, int]) -> dict[str, Any]:
    """The schedule of ``seed``: its workload (in turn), the round it is interrupted after, the nodes killed then."""
    rng = np.random.default_rng([seed, 60])
    name = names[seed % len(names)]
    killed = rng.choice(nodes[name], size=int(rng.integers(0, nodes[name] + 1)), replace=False)
    return {
        "seed": seed,
        "workload": name,
        "after_round": int(rng.integers(1, ROUNDS)),
        "killed": sorted(killed.tolist()),
    }


def numbers(results: dict[str, Any]) -> dict[str, Any]:
    """What must not change: each run's final metrics and rounds, wall times aside."""
    return {
        run["name"]: {
            "final": run["final"],
            "history": [{k: v for k, v in row.items() if k != "wall_time_s"} for row in run["history"]],
        }
        for run in results["runs"]
    }


def interrupted(deployment: LocalDeployment, source: dict[str, Any], plan: dict[str, Any], folder: Path) -> None:
    """Run ``source`` into ``folder / "out"``; once held after the plan's round, kill its nodes and stop the run."""
    lines: list[str] = []

    def faults() -> None:
        for node in plan["killed"]:
            deployment.kill_node(node)
        started = re.search(r"started run (\d+)", "".join(lines))
        if started is None:
            raise FedmosaicError("flwr run did not name its run before the hold")
        deployment.stop_run(int(started.group(1)))

    hold = folder / "hold"
    injector = threading.Thread(target=when_held, args=(hold, plan["after_round"], faults), daemon=True)
    injector.start()
    try:
        submit(
            source,
            folder / "out",
            deployment.connection,
            folder / "submit-1",
            hold_after=plan["after_round"],
            hold_dir=hold,
            write=lines.append,
        )
    except FedmosaicError:
        pass  # the run was stopped: it ends without results, as expected
    else:
        raise FedmosaicError(f"schedule {plan['seed']}: the stopped run completed")
    finally:
        (folder / "interrupted.log").write_text("".join(lines))
    injector.join()
    restarted(deployment)


def restarted(deployment: LocalDeployment, settle_s: float = 10.0, timeout_s: float = 300.0) -> None:
    """Start the killed SuperNodes again until each stays up for ``settle_s``.

    With node keys, a node started again at once is refused by the SuperLink
    (it fails to activate, code 2004) until the SuperLink has given up on the
    killed process under the same key (its heartbeat missed): the node exits,
    and is started again.
    """
    deadline = time.monotonic() + timeout_s
    deployment.revive()
    while time.monotonic() < deadline:
        time.sleep(settle_s)
        if not deployment.revive():
            return
    raise FedmosaicError(f"the killed SuperNodes did not stay up within {timeout_s:g} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schedules", type=int, default=20)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--work", type=Path, default=None, help="Keep the runs and logs in this new folder.")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as temporary:
        folder = args.work or Path(temporary)
        copy_examples(folder / "examples")
        experiments = workloads(folder / "examples")
        names, nodes = list(experiments), {name: used for name, (_, used) in experiments.items()}
        references = {
            name: numbers(run_experiment(load_config(_in_process(source)), folder / f"reference-{name}"))
            for name, (source, _) in experiments.items()
        }
        with LocalDeployment(folder / "deployment", NODES, tls=True, auth=True, log=lambda line: None) as deployment:
            for seed in range(args.first_seed, args.first_seed + args.schedules):
                plan = schedule(seed, names, nodes)
                source, _ = experiments[plan["workload"]]
                work = folder / f"schedule-{seed}"
                interrupted(deployment, source, plan, work)
                with (work / "resumed.log").open("w") as log:
                    resumed = submit(
                        source, work / "out", deployment.connection, work / "submit-2", resume=True, write=log.write
                    )
                differs = first_difference(references[plan["workload"]], numbers(resumed))
                rows.append(
                    {**plan, "faults": len(plan["killed"]) + 1, "identical": differs is None, "differs": differs}
                )
                print(json.dumps(rows[-1]), flush=True)
    emit(
        {
            "benchmark": "faults",
            "schedules": len(rows),
            "faults_injected": sum(row["faults"] for row in rows),
            "identical": sum(row["identical"] for row in rows),
            "rows": rows,
            "machine": machine(),
        },
        args.out,
    )


def _in_process(source: dict[str, Any]) -> dict[str, Any]:
    return source | {"federation": source["federation"] | {"engine": "inprocess"}}


if __name__ == "__main__":
    main()
