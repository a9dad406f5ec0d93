"""SCAFFOLD: local steps on g - c_i + c; option II control variates; the server's c moves by the sum of changes over N."""

import numpy as np
import pytest
import torch
from torch.nn import functional as F

from fedmosaic.data.arrays import ArrayDataset
from fedmosaic.federation import ClientContext, ClientState, Federation, InProcessGrid, Message, Schedule
from fedmosaic.methods.arrays import model_to_arrays
from fedmosaic.methods.horizontal.models import ModelParams, build_model
from fedmosaic.methods.horizontal.scaffold.build import build_scaffold
from fedmosaic.methods.horizontal.scaffold.client import ScaffoldClient, effective_steps
from fedmosaic.methods.horizontal.scaffold.messages import CONTROL, CONTROL_DELTA, LOCAL_CONTROL
from fedmosaic.methods.horizontal.scaffold.params import ScaffoldParams
from fedmosaic.methods.horizontal.task import HorizontalTask
from fedmosaic.methods.registry import get_method
from fedmosaic.methods.train_params import TrainParams

LR = 0.1
TRAIN = TrainParams(epochs=2, batch_size=4, lr=LR)


def _data() -> ArrayDataset:
    x = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [-1.0, 0.5]], np.float32)
    return ArrayDataset(x, np.array([0, 1, 1, 0]), num_classes=2)


def _factory() -> torch.nn.Module:
    return build_model(ModelParams(hidden=[]), (2,), 2)


def _gradient(weight: torch.Tensor, bias: torch.Tensor, data: ArrayDataset) -> tuple[torch.Tensor, torch.Tensor]:
    w, b = weight.clone().requires_grad_(True), bias.clone().requires_grad_(True)
    loss = F.cross_entropy(torch.from_numpy(data.x) @ w.T + b, torch.from_numpy(data.y))
    return torch.autograd.grad(loss, (w, b))


def test_a_client_step_follows_the_corrected_gradient_and_sets_option_two_control_variates() -> None:
    # Prepare: one batch of 4, 2 epochs -> K = 2 plain SGD steps; c and c_i given
    data = _data()
    start = model_to_arrays(_factory())
    c = {"1.weight": np.full((2, 2), 0.3, np.float32), "1.bias": np.array([0.2, -0.1], np.float32)}
    c_i = {"1.weight": np.array([[0.1, -0.2], [0.0, 0.4]], np.float32), "1.bias": np.array([-0.3, 0.1], np.float32)}
    state = ClientState(arrays={LOCAL_CONTROL + n: a.copy() for n, a in c_i.items()})
    message = Message(arrays={**start, **{CONTROL + n: a for n, a in c.items()}})
    # Hand computation: y1 = x - lr (g(x) - c_i + c), y2 = y1 - lr (g(y1) - c_i + c)
    w, b = torch.from_numpy(start["1.weight"]), torch.from_numpy(start["1.bias"])
    shift_w = torch.from_numpy(c["1.weight"] - c_i["1.weight"])
    shift_b = torch.from_numpy(c["1.bias"] - c_i["1.bias"])
    gw0, gb0 = _gradient(w, b, data)
    w1, b1 = w - LR * (gw0 + shift_w), b - LR * (gb0 + shift_b)
    gw1, gb1 = _gradient(w1, b1, data)
    w2, b2 = w1 - LR * (gw1 + shift_w), b1 - LR * (gb1 + shift_b)

    # Execute
    reply = ScaffoldClient(_factory, data, TRAIN).handle(message, state, ClientContext(0, 1, seed=3))

    # Assert: the model, and c_i+ = c_i - c + (x - y) / (K lr), which here is the mean plain gradient
    np.testing.assert_allclose(reply.arrays["1.weight"], w2.numpy(), atol=1e-6)
    np.testing.assert_allclose(reply.arrays["1.bias"], b2.numpy(), atol=1e-6)
    np.testing.assert_allclose(state.arrays[LOCAL_CONTROL + "1.weight"], ((gw0 + gw1) / 2).numpy(), atol=1e-5)
    np.testing.assert_allclose(state.arrays[LOCAL_CONTROL + "1.bias"], ((gb0 + gb1) / 2).numpy(), atol=1e-5)
    np.testing.assert_allclose(
        reply.arrays[CONTROL_DELTA + "1.bias"], ((gb0 + gb1) / 2).numpy() - c_i["1.bias"], atol=1e-5
    )


def test_the_gradient_hooks_are_removed_after_training() -> None:
    # Prepare
    client = ScaffoldClient(_factory, _data(), TRAIN)
    start = model_to_arrays(_factory())
    control = {CONTROL + n: np.ones_like(a) for n, a in start.items()}
    client.handle(Message(arrays={**start, **control}), ClientState(), ClientContext(0, 1, seed=3))
    model = client._model  # the client's working model, reused next round
    # Execute
    model.zero_grad()
    F.cross_entropy(model(torch.zeros(1, 2)), torch.tensor([0])).backward()
    # Assert: a plain backward pass gives the plain gradient (the bias gradient of CE at equal logits is p - y)
    expected = torch.softmax(model(torch.zeros(1, 2)), 1)[0] - torch.tensor([1.0, 0.0])
    np.testing.assert_allclose(model[1].bias.grad.numpy(), expected.detach().numpy(), atol=1e-6)


def test_the_server_control_variate_moves_by_the_sum_of_changes_over_all_clients() -> None:
    # Prepare: 4 clients, 2 per round
    data = _data()
    task = HorizontalTask([data] * 4, data, ModelParams(hidden=[]), TRAIN)
    server, clients = build_scaffold(task, ScaffoldParams())
    grid = InProcessGrid(clients, 0)
    federation = Federation(server, grid, Schedule(4, clients_per_round=2), seed=0, rounds=1)

    # Execute
    federation.run()

    # Assert: c = (1/4) * sum of the 2 clients' control changes (their c_i+, since c_i = c = 0 at first)
    held = [s.arrays for s in grid.client_states().values() if s.arrays]
    assert len(held) == 2
    for name, c in server.control.items():
        np.testing.assert_allclose(c, sum(h[LOCAL_CONTROL + name] for h in held) / 4, atol=1e-7)


def test_scaffold_is_registered_for_classification_and_rejects_a_bad_server_lr() -> None:
    # Execute
    method = get_method("scaffold")
    # Assert
    assert method.kind == "classification"
    assert method.params is ScaffoldParams
    with pytest.raises(ValueError, match="server_lr"):
        ScaffoldParams(server_lr=0.0)


@pytest.mark.parametrize("momentum", [0.0, 0.5, 0.9])
def test_effective_steps_is_the_displacement_of_momentum_sgd_under_a_constant_gradient(momentum: float) -> None:
    # Prepare: a linear loss g . w, whose gradient is g everywhere
    w = torch.zeros(3, requires_grad=True)
    g = torch.tensor([1.0, -2.0, 0.5])
    optimizer = torch.optim.SGD([w], lr=0.1, momentum=momentum)
    # Execute: 7 steps
    for _ in range(7):
        optimizer.zero_grad()
        (g * w).sum().backward()
        optimizer.step()
    # Assert
    np.testing.assert_allclose(-w.detach().numpy(), 0.1 * g.numpy() * effective_steps(7, momentum), rtol=1e-5)


def test_with_momentum_the_client_control_variate_estimates_the_mean_gradient() -> None:
    # Prepare: momentum 0.9 and a small lr, so the gradient barely changes over the 3 local steps
    # (dividing by K lr alone would give about 2.6 times the gradient here)
    data = _data()
    train = TrainParams(epochs=3, batch_size=4, lr=0.01, momentum=0.9)
    start = model_to_arrays(_factory())
    zero = {CONTROL + n: np.zeros_like(a) for n, a in start.items()}
    state = ClientState()
    gw, _ = _gradient(torch.from_numpy(start["1.weight"]), torch.from_numpy(start["1.bias"]), data)
    # Execute
    ScaffoldClient(_factory, data, train).handle(Message(arrays={**start, **zero}), state, ClientContext(0, 1, seed=3))
    # Assert
    np.testing.assert_allclose(state.arrays[LOCAL_CONTROL + "1.weight"], gw.numpy(), rtol=0.05, atol=1e-3)
