"""Specification of FALSE-VFL on the federation runtime."""

import copy

import numpy as np
import pytest
import torch

from fedmosaic.data.vertical_data import VerticalData
from fedmosaic.federation import Federation, Message, RoundContext, Schedule
from fedmosaic.methods.vertical.false_vfl import prediction
from fedmosaic.methods.vertical.false_vfl.bounds import iwae_bound
from fedmosaic.methods.vertical.false_vfl.build import build_false_vfl
from fedmosaic.methods.vertical.false_vfl.fusion import fuse_posteriors
from fedmosaic.methods.vertical.false_vfl.params import FalseVFLParams
from fedmosaic.methods.vertical.false_vfl.subsets import random_subsets
from fedmosaic.methods.vertical.networks import PartyModel
from fedmosaic.methods.vertical.task import VerticalTask

from ..conftest import train, with_shuffled_test_labels
from ..recording import RecordingGrid

PARAMS = FalseVFLParams(
    latent=4, top_latent=2, hidden=8, batch_size=16, kappa=3, predict_samples=5, stage1_rounds=2, classifier_passes=2
)
ALLOWED = {
    "down": {"rows", "h", "grad.mean", "grad.logvar", "grad.loglik"},
    "up": {"mean", "logvar", "loglik", "dloglik_dh"},
}


def run(data: VerticalData, params: FalseVFLParams, rounds: int, on_round=None) -> tuple[Federation, RecordingGrid]:  # type: ignore[no-untyped-def]
    server, factory = build_false_vfl(VerticalTask(data, rounds), params)
    grid = RecordingGrid(factory, 0)
    federation = Federation(server, grid, Schedule(num_clients=data.num_parties - 1), seed=0, rounds=rounds)
    federation.run(on_round=on_round)
    return federation, grid


@pytest.mark.parametrize("variant", ["I", "II"])
def test_no_raw_feature_leaves_a_passive_party(tiny_data: VerticalData, variant: str) -> None:
    # Prepare: every feature value is a distinct continuous number
    raw = np.concatenate([b[~np.isnan(b)] for split in tiny_data.splits.values() for b in split.blocks[1:]])

    # Execute
    _, grid = run(tiny_data, PARAMS.model_copy(update={"variant": variant}), rounds=3)

    # Assert
    assert grid.transfers
    for direction, _, message in grid.transfers:
        assert set(message.arrays) <= ALLOWED[direction]
        for name, array in message.arrays.items():
            if name != "rows":
                assert not np.isin(array.astype(np.float32), raw).any(), name


def test_stage_two_leaves_the_generative_parameters_bit_identical(tiny_data: VerticalData) -> None:
    # Prepare
    snapshots = []

    def keep(record) -> None:  # type: ignore[no-untyped-def]
        snapshots.append((federation_box[0].server.state_dict(), federation_box[0].grid.client_states()))

    federation_box: list[Federation] = []
    server, factory = build_false_vfl(VerticalTask(tiny_data, 5), PARAMS)
    federation = Federation(server, RecordingGrid(factory, 0), Schedule(num_clients=2), seed=0, rounds=5)
    federation_box.append(federation)

    # Execute
    federation.run(on_round=keep)

    # Assert: after stage 1 (round 2) only the classifier and its optimizer change
    (after_stage1, clients_stage1), (final, clients_final) = snapshots[1], snapshots[-1]
    generative = [k for k in final.arrays if k.startswith("model.") and not k.startswith("model.classifier.")]
    assert generative
    for key in generative:
        np.testing.assert_array_equal(final.arrays[key], after_stage1.arrays[key])
    assert any(
        not np.array_equal(final.arrays[k], after_stage1.arrays[k])
        for k in final.arrays
        if k.startswith("model.classifier.")
    )
    for client, state in clients_final.items():
        for key, value in state.arrays.items():
            np.testing.assert_array_equal(value, clients_stage1[client].arrays[key])


def test_stage_one_trains_everyone_and_stage_two_predicts(tiny_data: VerticalData) -> None:
    # Prepare
    records = []

    # Execute
    run(tiny_data, PARAMS, rounds=4, on_round=records.append)

    # Assert: 60 rows in batches of 16 -> 4 steps x 2 exchanges + 1 closing update
    assert [r.trips for r in records[:2]] == [9, 9]
    assert records[0].metrics["iwae_bound"] < records[1].metrics["iwae_bound"]
    assert "accuracy" not in records[0].metrics
    # stage 2: labeled posteriors once, then one exchange of samples per round; predicting takes two
    assert records[2].trips == 2 + 2
    assert records[3].trips == 1 + 2
    assert 0.0 <= records[3].metrics["accuracy"] <= 1.0


def test_stage_one_makes_stage1_passes_epochs_per_round(tiny_data: VerticalData) -> None:
    # Prepare
    params = PARAMS.model_copy(update={"stage1_passes": 2})
    records = []

    # Execute
    federation, _ = run(tiny_data, params, rounds=3, on_round=records.append)

    # Assert: 60 rows in batches of 16 -> 2 epochs x 4 steps x 2 exchanges + 1 closing update per stage-1 round
    assert [r.trips for r in records[:2]] == [17, 17]
    assert federation.server.artifacts()["stage1_steps"] == 2 * 2 * 4


def test_each_stage_two_pass_trains_on_its_own_fresh_samples(tiny_data: VerticalData) -> None:
    # Execute: two stage-1 rounds, then one stage-2 round of two passes
    _, grid = run(tiny_data, PARAMS, rounds=3)

    # Assert: the round fetches kappa samples per row for each pass in one exchange, and the passes' samples differ
    requests = [
        m
        for d, _, m in grid.transfers
        if d == "down" and m.config.get("action") == "loglik" and m.kind == "evaluate" and m.config["split"] == "train"
    ]
    kappa, passes = PARAMS.kappa, PARAMS.classifier_passes
    assert {m.arrays["h"].shape[0] for m in requests} == {kappa * passes}
    h = requests[0].arrays["h"]
    assert not np.allclose(h[:kappa], h[kappa:])


def test_the_same_seed_gives_the_same_results(tiny_data: VerticalData) -> None:
    first, again = [], []
    run(tiny_data, PARAMS, rounds=3, on_round=first.append)
    run(tiny_data, PARAMS, rounds=3, on_round=again.append)
    assert [r.metrics for r in first] == [r.metrics for r in again]


def test_a_party_decodes_only_rows_it_holds_in_variant_one(
    tiny_data: VerticalData, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Prepare: some rows lack the active party's block; record every row each likelihood is asked for
    assert not tiny_data.train.present[:, 0].all()
    asked: list[torch.Tensor] = []
    log_likelihood = PartyModel.log_likelihood

    def recording(self, x, present, h):  # type: ignore[no-untyped-def]
        asked.append(present)
        return log_likelihood(self, x, present, h)

    monkeypatch.setattr(PartyModel, "log_likelihood", recording)
    # Execute: training, stage 2 and prediction
    run(tiny_data, PARAMS, rounds=3)
    # Assert
    assert asked
    assert all(bool(present.all()) for present in asked)


def test_product_of_experts_fusion_also_trains(tiny_data: VerticalData) -> None:
    records = []
    run(tiny_data, PARAMS.model_copy(update={"fusion": "poe"}), rounds=3, on_round=records.append)
    assert np.isfinite(records[0].metrics["iwae_bound"])
    assert "accuracy" in records[-1].metrics


def test_the_exchanged_gradients_equal_those_of_one_joint_computation(tiny_data: VerticalData) -> None:
    # Prepare: the real active party and passive parties, initialised; one batch of every training row
    server, factory = build_false_vfl(VerticalTask(tiny_data, 2), PARAMS)
    grid = RecordingGrid(factory, 0)
    ctx = RoundContext(round=1, clients=[0, 1], seed=0, grid=grid)
    server.initialize(0)
    split, rows = tiny_data.train, np.arange(len(tiny_data.train))
    ctx.exchange({c: Message(arrays={"rows": rows}, config={"action": "posterior", "split": "train"}) for c in (0, 1)})
    active = copy.deepcopy(server._model)
    logic = {c: factory(c) for c in (0, 1)}
    parties = {c: logic[c].load(state, 0)[0] for c, state in grid.client_states().items()}

    # Execute: one step through messages, and the same step as one autograd graph
    _, sent = server._pretrain_step(ctx, split, rows, {}, torch.Generator().manual_seed(7))
    exchanged = {}
    for c, party in parties.items():
        x, present = logic[c].features("train", rows)
        mean, logvar = party.encoder(x[present])
        h = torch.from_numpy(np.array(grid.client_states()[c].arrays["pending.h"]))
        loglik = party.log_likelihood(x[present], torch.ones(int(present.sum()), dtype=torch.bool), h)
        grads = {k: torch.from_numpy(v) for k, v in sent[c].items()}
        surrogate = (
            (mean * grads["grad.mean"]).sum()
            + (logvar * grads["grad.logvar"]).sum()
            + (loglik * grads["grad.loglik"]).sum()
        )
        exchanged[c] = torch.autograd.grad(surrogate, list(party.parameters()))
    joint = joint_gradients(active, parties, split, rows, torch.Generator().manual_seed(7))

    # Assert
    for c in parties:
        for a, b in zip(exchanged[c], joint[c], strict=True):
            torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)


def joint_gradients(active, parties, split, rows, generator):  # type: ignore[no-untyped-def]
    """The IWAE loss's gradient in each passive party's parameters, all parties in one graph."""
    present = torch.from_numpy(split.present[rows])
    blocks = [torch.from_numpy(np.nan_to_num(b[rows])) for b in split.blocks]
    encoders = [active.party.encoder] + [parties[c].encoder for c in sorted(parties)]
    models = [active.party] + [parties[c] for c in sorted(parties)]
    means, logvars = [], []
    for k, encoder in enumerate(encoders):
        m, lv = encoder(blocks[k])
        means.append(torch.where(present[:, [k]], m, torch.zeros(())))
        logvars.append(torch.where(present[:, [k]], lv, torch.zeros(())))
    q_mean, q_logvar = fuse_posteriors(torch.stack(means, 1), torch.stack(logvars, 1), present, PARAMS.fusion)
    h = q_mean + torch.exp(0.5 * q_logvar) * torch.randn((PARAMS.kappa, *q_mean.shape), generator=generator)
    loglik = sum(model.log_likelihood(blocks[k], present[:, k], h) for k, model in enumerate(models))
    loss = -iwae_bound(active.log_weights(h, q_mean, q_logvar, loglik, active.top_noise(h, generator))).mean()
    return {c: torch.autograd.grad(loss, list(parties[c].parameters()), retain_graph=True) for c in sorted(parties)}


def test_stage_two_is_selected_on_validation_never_on_test_rows(validated_data: VerticalData) -> None:
    # Prepare
    shuffled = with_shuffled_test_labels(validated_data)

    # Execute
    server, records, _ = train(validated_data, build_false_vfl, PARAMS, rounds=6)
    again, shuffled_records, _ = train(shuffled, build_false_vfl, PARAMS, rounds=6)
    selected = server.artifacts()["selected_round"]
    _, prefix, _ = train(validated_data, build_false_vfl, PARAMS, rounds=selected)

    # Assert: validated in every stage-2 round, the first best round selected whatever the test labels, and tested
    validated = {r.round: r.metrics["validation_accuracy"] for r in records if "validation_accuracy" in r.metrics}
    assert sorted(validated) == [3, 4, 5, 6]
    assert selected == max(validated, key=lambda r: (validated[r], -r)) == again.artifacts()["selected_round"]
    assert [r.metrics.get("validation_accuracy") for r in records] == [
        r.metrics.get("validation_accuracy") for r in shuffled_records
    ]
    assert records[-1].metrics["accuracy"] == prefix[-1].metrics["accuracy"]


def test_runs_record_validation_rows_selected_round_and_optimizer_steps_of_both_stages(
    validated_data: VerticalData,
) -> None:
    # Execute
    server, _, _ = train(validated_data, build_false_vfl, PARAMS, rounds=5)

    # Assert: 60 rows in batches of 16 -> 4 steps per stage-1 round; 15 labeled rows -> 1 batch x 2 passes per stage-2 round
    artifacts = server.artifacts()
    assert artifacts["validation_rows"] == 5
    assert artifacts["selected_round"] in (3, 4, 5)
    assert (artifacts["stage1_steps"], artifacts["classifier_steps"]) == (2 * 4, 3 * 2)
    assert artifacts["optimizer_steps"] == 8 + 6


def test_the_effective_sample_size_of_the_prediction_weights_is_reported_per_test_setting(
    tiny_data: VerticalData,
) -> None:
    # Execute
    _, records, _ = train(tiny_data, build_false_vfl, PARAMS, rounds=3)

    # Assert
    assert 1.0 <= records[-1].metrics["snis_ess_mcar3"] <= PARAMS.predict_samples
    assert "snis_ess_mcar3" not in records[0].metrics


def test_importance_sampling_by_blocks_of_rows_gives_the_numbers_of_one_block(
    tiny_data: VerticalData, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Prepare: 5 prediction samples and 3 or 7 reported ones; blocks of at most 7 latent rows
    params = PARAMS.model_copy(update={"report_samples": [3, 7]})
    _, whole, _ = train(tiny_data, build_false_vfl, params, rounds=3)
    monkeypatch.setattr(prediction, "LATENT_ROWS", 7)

    # Execute
    _, blocks, grid = train(tiny_data, build_false_vfl, params, rounds=3)

    # Assert: the same metrics, and no log-likelihood request above the block size
    assert blocks[-1].metrics == pytest.approx(whole[-1].metrics, rel=1e-6)
    evaluated = [
        m.arrays["h"]
        for direction, _, m in grid.transfers
        if direction == "down" and m.kind == "evaluate" and "h" in m.arrays
    ]
    assert evaluated
    assert max(h.shape[0] * h.shape[1] for h in evaluated) <= 7


@pytest.mark.parametrize("rule", ["snis", "mean"])
def test_each_prediction_rule_is_the_accuracy_and_every_rule_is_reported(tiny_data: VerticalData, rule: str) -> None:
    # Prepare
    params = PARAMS.model_copy(update={"prediction": rule, "report_samples": [3, 7]})

    # Execute
    _, records, _ = train(tiny_data, build_false_vfl, params, rounds=3)

    # Assert: the headline is the rule's; SNIS, the posterior mean and SNIS with 3 and 7 samples are all there
    metrics = records[-1].metrics
    assert metrics["accuracy_mcar3"] == metrics[f"{rule}_accuracy_mcar3"]
    assert {"snis3_accuracy_mcar3", "snis7_accuracy_mcar3", "mean_accuracy_mcar3"} <= set(metrics)
    assert all(0.0 <= metrics[key] <= 1.0 for key in metrics if "accuracy_" in key)


def test_every_validated_round_reports_each_rules_validation_accuracy(validated_data: VerticalData) -> None:
    # Execute
    _, records, _ = train(validated_data, build_false_vfl, PARAMS.model_copy(update={"prediction": "mean"}), rounds=3)

    # Assert: stage-2 rounds compare the rules on the validation rows; the selected one is the rule's
    metrics = records[-1].metrics
    assert metrics["validation_accuracy"] == metrics["validation_mean_accuracy"]
    assert {"validation_snis_accuracy", "validation_ess_accuracy"} <= set(metrics)
    assert "validation_snis_accuracy" not in records[0].metrics


def test_the_ess_rule_takes_the_posterior_mean_exactly_where_the_weights_are_degenerate(
    tiny_data: VerticalData,
) -> None:
    # Execute: a floor above every possible ESS is the posterior mean; a floor of 1 is SNIS
    _, above, _ = train(
        tiny_data, build_false_vfl, PARAMS.model_copy(update={"prediction": "ess", "ess_floor": 1e9}), rounds=3
    )
    _, at_one, _ = train(
        tiny_data, build_false_vfl, PARAMS.model_copy(update={"prediction": "ess", "ess_floor": 1.0}), rounds=3
    )

    # Assert
    assert above[-1].metrics["accuracy_mcar3"] == above[-1].metrics["mean_accuracy_mcar3"]
    assert at_one[-1].metrics["accuracy_mcar3"] == at_one[-1].metrics["snis_accuracy_mcar3"]


def test_random_subsets_stay_within_the_present_parties_and_keep_at_least_one() -> None:
    # Prepare
    present = torch.rand(5000, 4, generator=torch.Generator().manual_seed(1)) < 0.7
    present[:, 0] |= ~present.any(1)

    # Execute
    subsets = random_subsets(present, 0.5, torch.Generator().manual_seed(2))

    # Assert: a full row of four keeps each party with probability 1/2 (a little more: at least one is kept)
    assert (subsets <= present).all()
    assert subsets.any(1).all()
    full = present.all(1)
    assert 0.5 < subsets[full].float().mean() < 0.56


def test_party_subsets_add_a_subset_bound_in_stage_one_and_subset_rows_in_stage_two(tiny_data: VerticalData) -> None:
    # Prepare: every labeled row trained on a subset of its parties in stage 2
    params = PARAMS.model_copy(update={"party_subsets": True, "subset_rate": 1.0})

    # Execute
    server, records, grid = train(tiny_data, build_false_vfl, params, rounds=3)
    _, _plain_records, plain_grid = train(tiny_data, build_false_vfl, PARAMS, rounds=3)

    # Assert: stage 1 sends the samples of both bounds together (2 kappa); stage 2 asks for fewer log-likelihoods
    def loglik_requests(grid: RecordingGrid, kind: str) -> list[Message]:
        return [
            m for d, _, m in grid.transfers if d == "down" and m.config.get("action") == "loglik" and m.kind == kind
        ]

    assert {m.arrays["h"].shape[0] for m in loglik_requests(grid, "train")} == {2 * PARAMS.kappa}
    stage2 = [m for m in loglik_requests(grid, "evaluate") if m.config["split"] == "train"]
    plain_stage2 = [m for m in loglik_requests(plain_grid, "evaluate") if m.config["split"] == "train"]
    assert sum(len(m.arrays["rows"]) for m in stage2) < sum(len(m.arrays["rows"]) for m in plain_stage2)
    assert np.isfinite(records[0].metrics["iwae_bound"])
    assert 0.0 <= records[-1].metrics["accuracy"] <= 1.0
    assert server.artifacts()["party_subsets"] is True
