"""A real SuperLink and SuperNodes on 127.0.0.1: same results as in process, secured, and robust to a lost node.

The tests that start Flower processes are marked slow: processes start and
connect, and each trip still waits on Flower (docs/flower-internals.md, "What a message
still waits for"). The tests that can
share a deployment use the module's (``deployment``, tests/deploy/conftest.py).
A secured deployment (TLS, registered node keys) runs end to end in the own-data
tutorial's test (tests/test_own_data_tutorial.py), which runs ``fedmosaic deploy
--tls --auth`` as the page writes it.
"""

import json
import re
import threading
import time
from pathlib import Path

import pytest

from fedmosaic.deploy.local import deploy_experiment
from fedmosaic.deploy.processes import LocalDeployment
from fedmosaic.deploy.security import make_node_key
from fedmosaic.deploy.submit import submit
from fedmosaic.errors import ConfigError, FedmosaicError
from fedmosaic.examples import copy_examples
from fedmosaic.experiments.config import load_config
from fedmosaic.experiments.hold import when_held
from fedmosaic.experiments.presets import resolve_experiment
from fedmosaic.experiments.runner import MESSAGES, run_experiment
from fedmosaic.federation.audit import read_log
from fedmosaic.federation.secagg.protocol import MASKED, PREFIX

DIGITS = {
    "name": "deploy-digits",
    "seed": 2,
    "data": {"dataset": "digits"},
    "partition": {"scheme": "dirichlet", "num_clients": 3, "alpha": 0.5, "min_size": 20},
    "federation": {"rounds": 2, "engine": "flower", "reply_timeout_s": 120.0},
    "model": {"hidden": [16]},
    "train": {"batch_size": 32, "lr": 0.1},
    "runs": [{"name": "FedAvg", "method": "fedavg"}],
}
ASIA = {
    "name": "deploy-asia",
    "seed": 0,
    "data": {"dataset": "bnlearn", "network": "asia", "samples": 2000},
    "concepts": {"num_clients": 4, "initial_clients": 3, "join_round": 2},
    "federation": {"rounds": 2, "engine": "flower", "reply_timeout_s": 120.0},
    "train": {"epochs": 1, "batch_size": 256, "optimizer": "adam", "lr": 0.01},
    "runs": [{"name": "F-CMs", "method": "fcm", "params": {"model": {"family": "cbm"}}}],
}


SCAFFOLD = {
    "name": "deploy-scaffold",
    "seed": 2,
    "data": {"dataset": "digits"},
    "partition": {"scheme": "dirichlet", "num_clients": 3, "alpha": 0.5, "min_size": 20},
    "federation": {"rounds": 4, "engine": "flower", "reply_timeout_s": 120.0},
    "model": {"hidden": [16]},
    "train": {"batch_size": 32, "lr": 0.1, "momentum": 0.5},
    "runs": [{"name": "SCAFFOLD", "method": "scaffold"}],
}
"""SCAFFOLD keeps each client's control variate in its client state: a client that lost it would change the result."""


def _in_process(source: dict, out: Path) -> dict:
    return run_experiment(load_config(source | {"federation": source["federation"] | {"engine": "inprocess"}}), out)


def _numbers(results: dict) -> list:
    return [
        (run["final"], [{k: v for k, v in row.items() if k != "wall_time_s"} for row in run["history"]])
        for run in results["runs"]
    ]


def _changed(source: dict, **federation) -> dict:
    return json.loads(json.dumps(source)) | {"federation": source["federation"] | federation}


@pytest.mark.slow
@pytest.mark.xdist_group("deployment")
def test_fedavg_and_fcms_on_supernodes_equal_the_in_process_run(deployment: LocalDeployment, tmp_path: Path) -> None:
    """Bit-identical results; FedAvg with secure aggregation, its nodes uploading only masked arrays.

    F-CMs on asia needs 4 clients (3 base concept subsets and an additional one); the fourth joins at
    round 2 (a registration exchange, then training). FedAvg uses 3 of the nodes. Secure FedAvg ends
    within 0.5 points of the plain run (docs/secure-aggregation.md gives the measured differences).
    """
    # Prepare
    secure = _changed(DIGITS, audit=True) | {"aggregation": {"secure": True}}

    # Execute
    fedavg = submit(secure, tmp_path / "fedavg", deployment.connection, tmp_path / "submit-fedavg", write=print)
    fcms = submit(ASIA, tmp_path / "fcms", deployment.connection, tmp_path / "submit-fcms", write=print)

    # Assert
    assert _numbers(fedavg) == _numbers(_in_process(secure, tmp_path / "fedavg-inprocess"))
    plain = _in_process(DIGITS, tmp_path / "fedavg-plain")["runs"][0]["final"]
    assert all(abs(fedavg["runs"][0]["final"][k] - v) * 100 <= 0.5 for k, v in plain.items() if "accuracy" in k)
    uploads = [
        e for log in (tmp_path / "fedavg" / MESSAGES).glob("*.jsonl") for e in read_log(log) if e["direction"] == "up"
    ]
    assert any(MASKED in e["arrays"] for e in uploads)
    assert all(name.startswith(PREFIX) for e in uploads for name in e["arrays"])
    assert _numbers(fcms) == _numbers(_in_process(ASIA, tmp_path / "fcms-inprocess"))
    assert [row["replies"] for row in fcms["runs"][0]["history"]] == [3, 4]
    assert [row["trips"] for row in fcms["runs"][0]["history"]] == [2, 2]


@pytest.mark.slow
def test_with_node_keys_an_unregistered_supernode_is_refused(tmp_path: Path) -> None:
    # Execute
    with LocalDeployment(tmp_path / "deployment", 1, tls=True, auth=True) as deployment:
        stranger = deployment.start_node(1, make_node_key(tmp_path / "stranger", "key"), name="stranger")
        code = stranger.wait(timeout=120)

    # Assert
    assert code != 0
    assert (
        "[code: 2004] Failed to activate SuperNode" in (tmp_path / "deployment" / "logs" / "stranger.log").read_text()
    )
    assert deployment.remaining() == []


@pytest.mark.slow
@pytest.mark.xdist_group("deployment")
def test_a_supernode_killed_mid_run_is_reported_as_a_dropout_and_the_run_completes(
    deployment: LocalDeployment, tmp_path: Path
) -> None:
    """Node 2 is killed while the run is held after round 1 (checkpointed, round 2 not yet sent)."""
    # Prepare
    source = _changed(DIGITS, rounds=2, reply_timeout_s=20.0)  # how long the round waits for node 2
    hold = tmp_path / "hold"
    lines: list[str] = []
    killer = threading.Thread(target=when_held, args=(hold, 1, lambda: deployment.kill_node(2)), daemon=True)
    killer.start()

    # Execute
    start = time.monotonic()
    results = submit(
        source,
        tmp_path / "out",
        deployment.connection,
        tmp_path / "submit",
        hold_after=1,
        hold_dir=hold,
        write=lines.append,
    )
    killer.join()

    # Assert
    history = results["runs"][0]["history"]
    assert [row["status"] for row in history] == ["ok", "ok"]
    assert [row["dropped"] for row in history] == [[], [2]]
    assert [row["replies"] for row in history] == [3, 2]
    assert "final" in results["runs"][0]
    assert "accuracy" in results["runs"][0]["final"]
    assert any("client 2 dropped out" in line for line in lines)
    assert time.monotonic() - start < 300
    assert deployment.remaining("node-2") == []


@pytest.mark.slow
@pytest.mark.xdist_group("deployment")
def test_a_run_resumed_after_a_supernode_restart_equals_the_uninterrupted_run(
    deployment: LocalDeployment, tmp_path: Path
) -> None:
    """A run stopped after round 2 with a SuperNode restarted resumes to the uninterrupted run's result.

    While the run is held after round 2 (checkpointed, round 3 not yet sent), SuperNode 1 is killed (so round 3
    cannot complete) and the run is stopped (``flwr stop``); the node is started again (its memory, Flower's ``context.state``, is lost)
    and the run is resumed. The server continues from its checkpoint and every site from the client state on its
    own disk, so the result equals the uninterrupted run's.
    """
    # Prepare: interrupt the run while it is held after round 2
    _interrupt(deployment, SCAFFOLD, 2, tmp_path)

    # Execute
    resumed = submit(SCAFFOLD, tmp_path / "out", deployment.connection, tmp_path / "submit-2", resume=True, write=print)

    # Assert
    assert _numbers(resumed) == _numbers(_in_process(SCAFFOLD, tmp_path / "inprocess"))
    assert [row["replies"] for row in resumed["runs"][0]["history"]] == [3, 3, 3, 3]


@pytest.mark.slow
@pytest.mark.xdist_group("deployment")
def test_a_vertical_run_resumed_after_a_supernode_restart_equals_the_uninterrupted_run(
    deployment: LocalDeployment, tmp_path: Path
) -> None:
    """The vertical example (the clinic the coordinator, the lab and the imaging centre a node each), PlugVFL.

    As for SCAFFOLD above, held after round 1: the passive parties' state is the row alignment and the
    encoder with its Adam moments; the resumed run aligns the rows again, and each node continues from
    its own disk.
    """
    # Prepare: interrupt the run while it is held after round 1
    copy_examples(tmp_path)
    source = resolve_experiment(str(tmp_path / "vertical" / "vertical.toml")) | {
        "federation": {"rounds": 2, "engine": "flower", "reply_timeout_s": 120.0},
        "runs": [{"name": "PlugVFL", "method": "plug-vfl"}],
    }
    _interrupt(deployment, source, 1, tmp_path)

    # Execute
    resumed = submit(source, tmp_path / "out", deployment.connection, tmp_path / "submit-2", resume=True, write=print)

    # Assert
    assert _numbers(resumed) == _numbers(_in_process(source, tmp_path / "inprocess"))
    assert [row["replies"] for row in resumed["runs"][0]["history"]] == [2, 2]


def _interrupt(deployment: LocalDeployment, source: dict, rnd: int, tmp_path: Path) -> None:
    """Run ``source`` into ``tmp_path / "out"`` and interrupt it while it is held after round ``rnd``.

    SuperNode 1 is killed and the run stopped (``flwr stop``); then the node is started again, its
    memory (``context.state``) lost.
    """
    lines: list[str] = []
    hold = tmp_path / "hold"
    interrupter = threading.Thread(
        target=when_held, args=(hold, rnd, lambda: _kill_and_stop(deployment, 1, lines)), daemon=True
    )
    interrupter.start()
    with pytest.raises(FedmosaicError, match="ended without results"):
        submit(
            source,
            tmp_path / "out",
            deployment.connection,
            tmp_path / "submit-1",
            hold_after=rnd,
            hold_dir=hold,
            write=lines.append,
        )
    interrupter.join()
    deployment.revive()


def _kill_and_stop(deployment: LocalDeployment, node: int, lines: list[str]) -> None:
    """Kill SuperNode ``node`` (so the next round cannot complete) and stop the run (``flwr stop``)."""
    deployment.kill_node(node)
    started = re.search(r"started run (\d+)", "".join(lines))
    assert started is not None, "flwr run names its run before the first round"
    deployment.stop_run(int(started.group(1)))


def test_deploy_refuses_a_node_count_other_than_the_clients_before_starting_anything(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"--nodes.*number of clients \(3\), got 5"):
        deploy_experiment(DIGITS, tmp_path / "out", nodes=5)
    assert not (tmp_path / "out").exists()
