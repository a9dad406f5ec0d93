"""Engines: the same experiment gives the same numbers in process and on Flower's simulation."""

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from flwr.app import Context, RecordDict

from fedmosaic.errors import ConfigError
from fedmosaic.examples import copy_examples
from fedmosaic.experiments.config import apply_overrides, load_config, method_params, result_fingerprint
from fedmosaic.experiments.engines import JobSpec, SimulationEngine
from fedmosaic.experiments.flower_client import client_logic
from fedmosaic.experiments.inprocess_engine import job_key
from fedmosaic.experiments.presets import resolve_experiment
from fedmosaic.experiments.runner import configured_engine, run_experiment
from fedmosaic.experiments.workloads import prepare_workload
from fedmosaic.federation import ClientContext, ClientState, Message, Schedule, ServerLogic
from fedmosaic.methods.registry import get_method
from fedmosaic.methods.vertical.false_vfl.client import FalseVFLClient

DIGITS = {
    "name": "engines-digits",
    "seed": 4,
    "data": {"dataset": "digits"},
    "partition": {"scheme": "dirichlet", "num_clients": 3, "alpha": 0.5, "min_size": 20},
    "federation": {"rounds": 2},
    "model": {"hidden": [16]},
    "train": {"batch_size": 32, "lr": 0.1},
    "runs": [
        {"name": "FedAvg", "method": "fedavg"},
        {"name": "SCAFFOLD", "method": "scaffold"},
        {"name": "FedCFA (reference)", "method": "fedcfa-reference", "params": {"chunk_size": 32}},
    ],
}
SECURE_DIGITS = {**DIGITS, "aggregation": {"secure": True}}
"""The digits runs with secure aggregation: four exchanges a round instead of one."""
ASIA = {
    "name": "engines-asia",
    "seed": 0,
    "data": {"dataset": "bnlearn", "network": "asia", "samples": 2000},
    "concepts": {"num_clients": 4, "initial_clients": 2, "join_round": 2},
    "federation": {"rounds": 3},
    "train": {"epochs": 1, "batch_size": 256, "optimizer": "adam", "optimizer_state": "kept", "lr": 0.01},
    "runs": [{"name": "F-CMs", "method": "fcm", "params": {"model": {"family": "cbm"}}}],
}
VERTICAL = {
    "name": "engines-vertical",
    "seed": 3,
    "data": {"dataset": "digits"},
    "vertical": {
        "num_parties": 4,
        "train_missing": "mcar:0.5",
        "test_missing": "mcar:0.2",
        "label_budget": 40,
        "train_rows": 120,
        "test_rows": 60,
    },
    "federation": {"rounds": 3, "evaluate_every": 1},
    "runs": [
        {
            "name": "FALSE-VFL",
            "method": "false-vfl",
            "params": {"stage1_rounds": 1, "batch_size": 64, "hidden": 16, "classifier_passes": 1},
        },
        {"name": "LASER-VFL", "method": "laser-vfl", "params": {"batch_size": 64, "hidden": 16}},
        {"name": "FedHSSL", "method": "fedhssl", "params": {"pretrain_rounds": 1, "batch_size": 64, "hidden": 16}},
    ],
}
ROWS = np.arange(0, 120, 7)


def _with_engine(source: dict, engine: str) -> dict:
    return json.loads(json.dumps(source)) | {"federation": source["federation"] | {"engine": engine}}


def _simulated_on(source: dict, ray_address: str) -> dict:
    """``source`` on Flower's simulation, on the Ray cluster at ``ray_address``."""
    simulation = _with_engine(source, "flower-simulation")
    simulation["federation"]["ray_address"] = ray_address
    return simulation


def _numbers(results: dict) -> list[dict]:
    """Each run's history without wall times: what must not depend on the engine."""
    return [
        {
            "final": run["final"],
            "history": [{k: v for k, v in row.items() if k != "wall_time_s"} for row in run["history"]],
        }
        for run in results["runs"]
    ]


def test_the_configured_engine_is_the_one_named() -> None:
    # the in-process engine is built per run, with the cores the run may use
    assert configured_engine(load_config(DIGITS)) is None
    assert isinstance(configured_engine(load_config(_with_engine(DIGITS, "flower-simulation"))), SimulationEngine)


def test_the_flower_engine_needs_a_superlink() -> None:
    with pytest.raises(ConfigError, match=r"federation\.engine.*superlink"):
        configured_engine(load_config(_with_engine(DIGITS, "flower")))


def test_an_unknown_engine_is_refused_naming_the_accepted_ones() -> None:
    with pytest.raises(ConfigError, match=r"federation\.engine.*flower-simulation"):
        load_config(_with_engine(DIGITS, "ray"))


@pytest.mark.parametrize(
    ("source", "run", "request_for"),
    [
        (DIGITS, 0, lambda server: Message(arrays=server.params, config={"round": 1})),
        (VERTICAL, 0, lambda server: Message(arrays={"rows": ROWS}, config={"action": "posterior", "split": "train"})),
        (VERTICAL, 1, lambda server: Message(arrays={"rows": ROWS}, config={"action": "embed", "split": "train"})),
        (VERTICAL, 2, lambda server: Message(arrays={"rows": ROWS}, config={"action": "embed", "split": "train"})),
    ],
    ids=["fedavg", "false-vfl-passive-party", "laser-vfl-passive-party", "fedhssl-passive-party"],
)
def test_a_node_rebuilds_from_the_header_the_client_the_runner_builds(
    source: dict, run: int, request_for: Callable[[ServerLogic], Message]
) -> None:
    """The ClientApp's logic, made from the job header alone, replies exactly like the runner's.

    Vertical jobs too: a node rebuilds its passive party (its column block,
    its model) from the experiment in the header.
    """
    # Prepare
    config = load_config(source)
    workload = prepare_workload(config)
    job = workload.jobs("federated", config)[0]
    server, factory = get_method(config.runs[run].method).build(job.task, method_params(config, run))
    server.initialize(config.seed)
    spec = JobSpec(
        config.model_dump(mode="json", exclude_none=True), run, job.label, job.schedule, config.seed, factory
    )
    header = spec.header() | {"round": 1, "client": 2}
    node = Context(run_id=1, node_id=5, node_config={"partition-id": 2}, state=RecordDict(), run_config={})
    message = request_for(server)
    context = ClientContext(2, 1, 123)

    # Execute
    expected = factory(2).handle(message.read_only(), ClientState(), context)
    reply = client_logic(header, 2, node).handle(message.read_only(), ClientState(), context)

    # Assert
    assert reply.metrics == expected.metrics
    assert sorted(reply.arrays) == sorted(expected.arrays)
    for name in expected.arrays:
        np.testing.assert_array_equal(reply.arrays[name], expected.arrays[name])


def test_the_job_header_names_the_job_and_carries_the_experiment() -> None:
    config = load_config(DIGITS)
    document = config.model_dump(mode="json", exclude_none=True)

    header = JobSpec(document, 1, "federated", Schedule(num_clients=3), 4, lambda c: None, data_dir="/data").header()

    assert json.loads(header["experiment"]) == document
    assert (header["run"], header["label"], header["seed"], header["data-dir"]) == (1, "federated", 4, "/data")
    assert header["job"] == f"{result_fingerprint(document)}/1/federated"


@pytest.mark.slow
@pytest.mark.parametrize(
    "source",
    [
        pytest.param(SECURE_DIGITS, id="secure-digits", marks=pytest.mark.xdist_group("ray-digits")),
        pytest.param(ASIA, id="fcm-asia-joining", marks=pytest.mark.xdist_group("ray-asia-vertical")),
    ],
)
def test_flower_simulation_gives_bit_identical_results(source: dict, ray_address: str, tmp_path: Path) -> None:
    """FedAvg, SCAFFOLD, FedCFA and F-CMs (clients joining at round 2) on Flower's Ray simulation equal the in-process run.

    SCAFFOLD keeps each client's control variate in its state, FedCFA's reference protocol carries each
    client's SGD momentum from round 1 to round 2 there, and every F-CMs client keeps its optimizer there
    (``context.state`` on Flower). The digits runs use secure aggregation, whose clients keep their keys
    and shares there between a round's exchanges (SCAFFOLD's control variate changes in the same masked
    upload as its model).
    """
    # Execute
    in_process = run_experiment(load_config(source), tmp_path / "inprocess")
    simulated = run_experiment(load_config(_simulated_on(source, ray_address)), tmp_path / "simulation")

    # Assert
    assert _numbers(simulated) == _numbers(in_process)
    assert all(row["replies"] > 0 for run in simulated["runs"] for row in run["history"])


@pytest.mark.slow
@pytest.mark.xdist_group("ray-digits")
def test_an_own_model_on_own_npz_sites_gives_the_in_process_numbers_on_flower_simulation(
    ray_address: str, tmp_path: Path
) -> None:
    """The images example (a CNN of the user's own beside the experiment, three sites' .npz images) on Ray.

    Each simulated node imports the factory's module from the path the experiment records and reads its
    own site's file, as the in-process run does.
    """
    # Prepare
    copy_examples(tmp_path / "examples")
    source = resolve_experiment(str(tmp_path / "examples" / "images" / "images.toml"))
    source = apply_overrides(source, ["federation.rounds=2", "runs=[{name = 'FedAvg', method = 'fedavg'}]"])

    # Execute
    in_process = run_experiment(load_config(source), tmp_path / "inprocess")
    simulated = run_experiment(load_config(_simulated_on(source, ray_address)), tmp_path / "simulation")

    # Assert
    assert _numbers(simulated) == _numbers(in_process)
    assert in_process["runs"][0]["final"]["accuracy"] > 0.3


@pytest.mark.slow
@pytest.mark.xdist_group("ray-asia-vertical")
def test_false_vfl_and_fedhssl_on_flower_simulation_give_bit_identical_results(
    ray_address: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """FALSE-VFL and FedHSSL on Flower's simulation equal the in-process run.

    FALSE-VFL runs both stages, evaluating every round; FedHSSL pre-trains, then fine-tunes.

    The active party is the server logic; each passive party runs in the
    ClientApp, rebuilt from the job header, its model and optimizer in
    ``context.state`` between messages. In-process, FALSE-VFL's parties are
    handled one by one here, as on Flower's nodes: stacked, they agree within
    float rounding (``tests/methods/vertical/false_vfl/test_stacked.py``).
    """
    # Prepare
    source = VERTICAL | {"runs": [VERTICAL["runs"][0], VERTICAL["runs"][2]]}
    monkeypatch.setattr(FalseVFLClient, "batch_key", lambda self, message: None)

    # Execute
    in_process = run_experiment(load_config(source), tmp_path / "inprocess")
    simulated = run_experiment(load_config(_simulated_on(source, ray_address)), tmp_path / "simulation")

    # Assert
    assert _numbers(simulated) == _numbers(in_process)
    history = simulated["runs"][0]["history"]
    # stage 1: 2 mini-batches x 2 + update; stage 2: samples (+ posteriors once) + 2 to validate (+ 2 to test)
    assert [row["trips"] for row in history] == [5, 6, 5]
    assert "iwae_bound" in history[0]["metrics"]
    assert "accuracy" in history[-1]["metrics"]


def test_a_jobs_client_states_are_found_again_by_a_resume_with_other_workers() -> None:
    # Prepare: the configuration as recorded, resumed with other workers, and with another learning rate
    recorded = load_config(DIGITS).document()
    other_workers = load_config(apply_overrides(DIGITS, ["federation.workers=4"])).document()
    other_lr = load_config(apply_overrides(DIGITS, ["train.lr=0.2"])).document()
    # Execute
    keys = [job_key(document, 0, "federated") for document in (recorded, other_workers, other_lr)]
    # Assert: the sites' kept states are keyed by what changes results only
    assert keys[0] == keys[1]
    assert keys[0] != keys[2]
