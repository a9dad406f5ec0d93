"""Specification of FedHSSL's protocol: what crosses, which rows train, zero-filling, averaging, determinism."""

import numpy as np
import torch

from fedmosaic.data.missingness import Missingness
from fedmosaic.data.vertical_data import VerticalData, vertical_split
from fedmosaic.federation import ClientContext, ClientState, Federation, Message, Schedule
from fedmosaic.methods.vertical.fedhssl import server as fedhssl_server
from fedmosaic.methods.vertical.fedhssl.build import build_fedhssl
from fedmosaic.methods.vertical.fedhssl.client import FedHSSLClient
from fedmosaic.methods.vertical.fedhssl.params import FedHSSLParams
from fedmosaic.methods.vertical.fedhssl.simsiam import SimSiamParty, average_top_layers, top_layers
from fedmosaic.methods.vertical.split.baselines import fully_aligned_labeled_rows
from fedmosaic.methods.vertical.task import VerticalTask

from ..conftest import COLUMNS
from ..recording import RecordingGrid

PARAMS = FedHSSLParams(hidden=8, embedding=4, batch_size=8, pretrain_rounds=2)


def run(data: VerticalData, rounds: int, params: FedHSSLParams = PARAMS, seed: int = 0) -> tuple[list, RecordingGrid]:
    """Records of a FedHSSL run on ``data`` and the grid that saw its messages."""
    server, factory = build_fedhssl(VerticalTask(data, rounds), params)
    grid = RecordingGrid(factory, seed)
    records = list(Federation(server, grid, Schedule(num_clients=data.num_parties - 1), seed=seed, rounds=rounds).run())
    return records, grid


def sent(grid: RecordingGrid, action: str) -> list[tuple[int, Message]]:
    """``(client, message)`` of every message sent down with ``action``."""
    return [(c, m) for direction, c, m in grid.transfers if direction == "down" and m.config.get("action") == action]


def test_no_raw_feature_crosses_a_party_boundary_in_any_stage(tiny_data: VerticalData) -> None:
    # Prepare
    raw = np.concatenate([b[~np.isnan(b)] for split in tiny_data.splits.values() for b in split.blocks])

    # Execute
    _, grid = run(tiny_data, 4)

    # Assert: every stage spoke, and only representations, gradients, weights and row positions crossed
    actions = {m.config.get("action") for d, _, m in grid.transfers if d == "down"}
    assert actions == {"cross", "local", "average", "embed", "update"}
    allowed = {
        "rows",
        "aligned",
        "grad.prediction",
        "grad.embedding",
        "projection",
        "prediction",
        "target",
        "embedding",
    }
    for _, _, message in grid.transfers:
        weights = set(message.arrays) - allowed
        assert weights <= set(top_layers(SimSiamParty(1, PARAMS.hidden, PARAMS.embedding)))
        for name, array in message.arrays.items():
            if name not in {"rows", "aligned"}:
                assert not np.isin(array, raw).any(), name


def test_cross_party_pretraining_uses_the_rows_every_party_holds(tiny_data: VerticalData) -> None:
    aligned = np.flatnonzero(tiny_data.train.present.all(axis=1))

    _, grid = run(tiny_data, 3)

    # Assert: each pre-training epoch visits every aligned row once, and no other
    rows = np.concatenate([m.arrays["rows"] for c, m in sent(grid, "cross") if c == 0])
    assert len(aligned) > 0
    np.testing.assert_array_equal(np.sort(rows), np.sort(np.tile(aligned, PARAMS.pretrain_rounds)))
    for _, message in sent(grid, "local"):
        np.testing.assert_array_equal(message.arrays["aligned"], aligned)


def test_every_party_receives_the_mean_of_its_own_and_the_uploaded_top_layers(
    tiny_data: VerticalData, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    # Prepare: record the active party's own top layers as it averages
    own = []

    def recording(model, uploads):  # type: ignore[no-untyped-def]
        own.append(top_layers(model))
        return average_top_layers(model, uploads)

    monkeypatch.setattr(fedhssl_server, "average_top_layers", recording)

    # Execute: one pre-training round
    _, grid = run(tiny_data, 2, PARAMS.model_copy(update={"pretrain_rounds": 1}))

    # Assert
    uploads = [m.arrays for d, _, m in grid.transfers if d == "up" and "encoder.2.weight" in m.arrays]
    averages = [m.arrays for _, m in sent(grid, "average")]
    assert len(own) == 1
    assert len(uploads) == 2
    assert len(averages) == 2
    assert not any(name.startswith("encoder.0.") for name in averages[0])
    for name, value in own[0].items():
        expected = (value + uploads[0][name] + uploads[1][name]) / 3
        for average in averages:
            np.testing.assert_allclose(average[name], expected, rtol=1e-5, atol=1e-7)


def test_a_passive_party_loads_the_average_and_keeps_its_input_layer(tiny_data: VerticalData) -> None:
    # Prepare
    client = FedHSSLClient(1, tiny_data.splits, PARAMS)
    state = ClientState()
    aligned = np.flatnonzero(tiny_data.train.present.all(axis=1))
    local = Message(
        arrays={"aligned": aligned, "target": np.ones((len(aligned), 4), np.float32)}, config={"action": "local"}
    )
    uploaded = client.handle(local, state, ClientContext(0, 1, 7)).arrays
    before = client.load(state, 7)[0].encoder[0].weight.detach().clone()
    average = {name: np.full_like(value, 0.5) for name, value in uploaded.items()}

    # Execute
    reply = client.handle(Message(arrays=average, config={"action": "average"}), state, ClientContext(0, 1, 7))

    # Assert
    model = client.load(state, 7)[0]
    assert reply.arrays == {}
    for name, value in top_layers(model).items():  # type: ignore[arg-type]
        np.testing.assert_array_equal(value, average[name])
    torch.testing.assert_close(model.encoder[0].weight, before)


def test_fine_tuning_trains_on_fully_aligned_labeled_rows_only(tiny_data: VerticalData) -> None:
    expected = fully_aligned_labeled_rows(tiny_data.train)

    _records, grid = run(tiny_data, 4)

    trained = [m.arrays["rows"] for _, m in sent(grid, "embed") if m.config["train"]]
    assert len(expected) > 0
    assert trained
    for rows in trained:
        assert set(rows) <= set(expected)
    assert set(np.concatenate(trained)) == set(expected)


def test_test_rows_are_zero_filled_and_embedded_by_every_party(tiny_data: VerticalData) -> None:
    _records, grid = run(tiny_data, 3)

    evaluations = [(c, m) for c, m in sent(grid, "embed") if not m.config["train"]]
    test_rows = len(tiny_data.tests["MCAR 3"])
    assert evaluations
    assert all(m.config["zero_fill"] and len(m.arrays["rows"]) == test_rows for _, m in evaluations)
    replies = [m for d, _, m in grid.transfers if d == "up" and m.kind == "evaluate"]
    assert all(r.arrays["embedding"].shape == (test_rows, 4) for r in replies)


def test_each_fine_tuning_round_makes_passes_epochs(tiny_data: VerticalData) -> None:
    def training_batches(passes: int) -> int:
        _, grid = run(tiny_data, 3, PARAMS.model_copy(update={"passes": passes}))
        return sum(1 for c, m in sent(grid, "embed") if c == 0 and m.config["train"])

    assert training_batches(3) == 3 * training_batches(1) > 0


def test_no_accuracy_is_reported_during_pretraining(tiny_data: VerticalData) -> None:
    records, _ = run(tiny_data, 3)

    assert [("accuracy" in r.metrics) for r in records] == [False, False, True]
    assert "cross_party_loss" in records[0].metrics
    assert "local_ssl_loss" in records[0].metrics


def test_the_same_seed_gives_the_same_numbers_and_another_seed_others(tiny_data: VerticalData) -> None:
    first = [r.metrics for r in run(tiny_data, 3)[0]]
    again = [r.metrics for r in run(tiny_data, 3)[0]]
    other = [r.metrics for r in run(tiny_data, 3, seed=1)[0]]

    assert first == again
    assert first != other


def test_a_small_run_learns_well_above_chance() -> None:
    # Prepare: three well separated classes, 100 labels, 20% of each block missing in training, none at test
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, size=500)
    x = (rng.normal(size=(500, 7)) + 2 * y[:, None]).astype(np.float32)
    train = vertical_split(x[:400], y[:400], COLUMNS, Missingness("mcar", 0.2), rng, 100)
    test = vertical_split(x[400:], y[400:], COLUMNS, Missingness("mcar", 0.0), rng)
    data = VerticalData(train, {"MCAR 0": test}, 3, "gaussian")
    params = FedHSSLParams(hidden=16, embedding=8, batch_size=32, pretrain_rounds=2, lr=1e-2)

    # Execute
    records, _ = run(data, 10, params)

    # Assert: chance is 1/3
    assert records[-1].metrics["accuracy"] > 0.8
