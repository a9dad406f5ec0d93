"""The message audit: every message's names, shapes and bytes; nothing leaves a client per sample."""

from __future__ import annotations

from pathlib import Path

import pytest

from fedmosaic.examples import copy_examples
from fedmosaic.experiments.config import apply_overrides, load_config
from fedmosaic.experiments.presets import resolve_experiment
from fedmosaic.experiments.runner import MESSAGES, run_experiment
from fedmosaic.federation.audit import read_log
from fedmosaic.methods.vertical.fedhssl.simsiam import SimSiamParty, top_layers

CLASSIFICATION = {
    "name": "audit",
    "seed": 1,
    "data": {"dataset": "digits"},
    "partition": {"scheme": "dirichlet", "num_clients": 3, "alpha": 1.0, "min_size": 40},
    "federation": {"rounds": 2, "audit": True},
    "model": {"hidden": [8]},
    "train": {"batch_size": 64},
    "runs": [
        {"name": "FedAvg", "method": "fedavg"},
        {"name": "FedProx", "method": "fedprox"},
        {"name": "FedMix", "method": "fedmix", "params": {"mean_batch": 20}},
        {"name": "NaiveMix", "method": "naivemix", "params": {"mean_batch": 20}},
        {"name": "FedCFA", "method": "fedcfa", "params": {"chunk_size": 16}},
    ],
}
CONCEPTS = {
    "name": "audit-fcm",
    "seed": 1,
    "data": {"dataset": "bnlearn", "network": "asia", "samples": 1500},
    "concepts": {"num_clients": 8, "initial_clients": 6, "join_round": 2},
    "federation": {"rounds": 2, "audit": True},
    "runs": [{"name": "F-CMs", "method": "fcm", "params": {"patience": 0}}],
}


VERTICAL = {
    "name": "audit-vfl",
    "seed": 1,
    "data": {"dataset": "digits"},
    "vertical": {"num_parties": 4, "label_budget": 100, "train_rows": 300, "test_rows": 100},
    "federation": {"rounds": 2, "audit": True},
    "runs": [
        {
            "name": "FALSE-VFL",
            "method": "false-vfl",
            "params": {"stage1_rounds": 1, "latent": 4, "top_latent": 2, "hidden": 8},
        },
        {"name": "Vanilla", "method": "vanilla-vfl", "params": {"embedding": 4, "hidden": 8}},
        {"name": "PlugVFL", "method": "plug-vfl", "params": {"embedding": 4, "hidden": 8}},
        {"name": "LASER", "method": "laser-vfl", "params": {"embedding": 4, "hidden": 8}},
        {"name": "FedHSSL", "method": "fedhssl", "params": {"pretrain_rounds": 1, "embedding": 4, "hidden": 8}},
    ],
}
DECLARED_LATENTS = {"mean": 4, "logvar": 4, "embedding": 4, "dloglik_dh": 4, "projection": 4, "prediction": 4}
TOP_LAYERS = {name: list(value.shape) for name, value in top_layers(SimSiamParty(1, 8, 4)).items()}
"""FedHSSL's averaged layers: the same shapes for every party, whatever its block."""


def _logs(tmp_path: Path, source: dict) -> dict[str, list[dict]]:
    run_experiment(load_config(source), tmp_path / "out")
    return {path.stem: read_log(path) for path in sorted((tmp_path / "out" / MESSAGES).glob("*.jsonl"))}


def _per_sample(entries: list[dict]) -> list[str]:
    """Uploads that hold something of one row per example.

    That is an array with as many rows as the client's examples, or a name the server never sent whose
    rows are not fewer than the examples.
    """
    sent = {(e["round"], e["client"]): e["arrays"] for e in entries if e["direction"] == "down"}
    found = []
    for entry in entries:
        if entry["direction"] != "up" or "num_examples" not in entry["metrics"]:
            continue
        examples = int(entry["metrics"]["num_examples"])
        down = sent.get((entry["round"], entry["client"]), {})
        for name, array in entry["arrays"].items():
            shape = array["shape"]
            if name in down and shape != down[name]["shape"]:
                found.append(f"{name}: shape {shape} differs from what was sent")
            if examples in shape or (name not in down and shape and shape[0] >= examples):
                found.append(f"client {entry['client']} round {entry['round']}: {name} {shape} for {examples} examples")
    return found


def test_every_message_is_logged_with_names_shapes_and_bytes(tmp_path: Path) -> None:
    logs = _logs(tmp_path, {**CLASSIFICATION, "runs": CLASSIFICATION["runs"][:1]})
    (entries,) = logs.values()
    assert {e["direction"] for e in entries} == {"down", "up"}
    assert len([e for e in entries if e["direction"] == "up"]) == 2 * 3
    for entry in entries:
        assert entry["bytes"] >= sum(a["bytes"] for a in entry["arrays"].values()) > 0
        assert all(set(a) == {"shape", "dtype", "bytes"} for a in entry["arrays"].values())


@pytest.mark.parametrize("source", [CLASSIFICATION, CONCEPTS], ids=["classification", "concepts"])
def test_no_client_message_of_any_method_holds_anything_per_sample(tmp_path: Path, source: dict) -> None:
    logs = _logs(tmp_path, source)
    assert len(logs) == len(source["runs"])
    for name, entries in logs.items():
        assert any(e["direction"] == "up" and e["arrays"] for e in entries), name
        assert _per_sample(entries) == [], name


def test_the_check_finds_raw_rows(tmp_path: Path) -> None:
    # The detector itself: an upload of one row per example is found.
    entries = [
        {"round": 1, "client": 0, "direction": "down", "arrays": {"w": {"shape": [4]}}},
        {
            "round": 1,
            "client": 0,
            "direction": "up",
            "arrays": {"w": {"shape": [4]}, "rows": {"shape": [37, 64]}},
            "metrics": {"num_examples": 37.0},
        },
    ]
    assert len(_per_sample(entries)) == 1


def test_vertical_uploads_are_only_the_declared_per_row_latents(tmp_path: Path) -> None:
    # Vertical FL sends one latent per requested row by design: the declared exception to the check above.
    # Every upload holds only the protocol's names, of the latent width (never a party's feature block),
    # one log-likelihood per sample and row, or FedHSSL's top layers (no row dimension).
    logs = _logs(tmp_path, VERTICAL)
    assert len(logs) == len(VERTICAL["runs"])
    for name, entries in logs.items():
        uploads = [e for e in entries if e["direction"] == "up"]
        assert any(e["arrays"] for e in uploads), name
        for entry in uploads:
            assert not entry["metrics"], name
            assert not entry["config"], name
            for array, info in entry["arrays"].items():
                if array == "loglik":
                    assert len(info["shape"]) == 2, name
                elif array in TOP_LAYERS:
                    assert info["shape"] == TOP_LAYERS[array], (name, array)
                else:
                    assert info["shape"][-1] == DECLARED_LATENTS[array], (name, array)


def test_the_audit_of_a_run_on_own_tables_holds_the_scaling_exchange(tmp_path: Path) -> None:
    # Prepare: the three asia hospitals, one round of F-CMs, audit on
    copy_examples(tmp_path / "examples")
    source = apply_overrides(
        resolve_experiment(str(tmp_path / "examples" / "asia" / "asia.toml")),
        ["federation.rounds=1", "federation.audit=true", 'runs=[{name = "F-CMs", method = "fcm"}]'],
    )

    # Execute
    run_experiment(load_config(source), tmp_path / "out")

    # Assert: every site was asked once and answered with its count, sums and sums of squares, nothing else
    scaling = read_log(tmp_path / "out" / MESSAGES / "scaling.jsonl")
    down = [entry for entry in scaling if entry["direction"] == "down"]
    up = [entry for entry in scaling if entry["direction"] == "up"]
    assert sorted(entry["client"] for entry in down) == sorted(entry["client"] for entry in up) == [0, 1, 2]
    assert all(entry["arrays"] == {} for entry in down)
    assert all(set(entry["arrays"]) == {"count", "sum", "sum_sq"} for entry in up)
    assert all(entry["arrays"]["sum"]["shape"] == [8] for entry in up)
    assert sorted(path.name for path in (tmp_path / "out" / MESSAGES).iterdir()) == [
        "00-f-cms-federated.jsonl",
        "scaling.jsonl",
    ]


def test_the_audit_of_a_vertical_run_on_own_tables_holds_the_row_alignment(tmp_path: Path) -> None:
    # Prepare: the clinic, the lab and the imaging centre, two rounds of FALSE-VFL, audit on
    copy_examples(tmp_path / "examples")
    source = apply_overrides(
        resolve_experiment(str(tmp_path / "examples" / "vertical" / "vertical.toml")),
        [
            "federation.rounds=2",
            "federation.audit=true",
            'runs=[{name = "FALSE-VFL", method = "false-vfl", params = {stage1_rounds = 1}}]',
        ],
    )

    # Execute
    run_experiment(load_config(source), tmp_path / "out")

    # Assert: both steps of the intersection with each passive party crossed, and what they
    # sent is encrypted bytes only
    alignment = read_log(tmp_path / "out" / MESSAGES / "alignment.jsonl")
    assert sorted((entry["kind"], entry["direction"], entry["client"]) for entry in alignment) == [
        (kind, direction, client)
        for kind in ("query.psi-request", "query.psi-rows")
        for direction in ("down", "up")
        for client in (0, 1)
    ]
    uploads = [array for entry in alignment if entry["direction"] == "up" for array in entry["arrays"].values()]
    assert uploads
    assert all(array["dtype"] == "uint8" for array in uploads)
    assert sorted(path.name for path in (tmp_path / "out" / MESSAGES).iterdir()) == [
        "00-false-vfl-federated.jsonl",
        "alignment.jsonl",
    ]
