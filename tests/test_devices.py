"""The device setting: names accepted and refused on one line, the run's device set for a block, then restored.

What runs on a GPU is checked where one is present (``CUDA``); elsewhere those
tests are skipped, never failed.
"""

import pytest
import torch

from fedmosaic.devices import compute_device, computing_on, generator_on, parse_device, resolve_device, to_device
from fedmosaic.errors import ConfigError

CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
NO_CUDA = pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")


@pytest.mark.parametrize(
    ("name", "expected"),
    [("cpu", "cpu"), ("auto", "cpu"), ("cuda", "cuda"), ("cuda:1", "cuda:1"), ("mps", "mps")],
)
def test_every_device_name_is_understood_on_any_machine(name: str, expected: str) -> None:
    assert parse_device(name) == torch.device(expected)


@pytest.mark.parametrize("name", ["gpu", "CUDA", "cuda:", "cuda:-1", "cuda:x", "cpu:0", "", "tpu"])
def test_a_name_of_no_device_is_refused_on_one_line_naming_the_setting(name: str) -> None:
    with pytest.raises(ConfigError) as refused:
        parse_device(name)
    assert refused.value.field == "train.device"
    assert str(refused.value) == f"train.device: expected 'auto', 'cpu', 'cuda', 'cuda:N' or 'mps', got {name!r}"


@NO_CUDA
@pytest.mark.parametrize("name", ["cuda", "cuda:0", "cuda:3"])
def test_cuda_is_refused_where_there_is_none_and_auto_falls_back_to_the_cpu(name: str) -> None:
    with pytest.raises(ConfigError, match=rf"^train.device: '{name}' is not available: this machine has no CUDA"):
        resolve_device(name)
    assert resolve_device("auto") == torch.device("cpu")


@pytest.mark.skipif(torch.backends.mps.is_available(), reason="this machine has an Apple GPU")
def test_mps_is_refused_where_there_is_none() -> None:
    with pytest.raises(ConfigError, match=r"^train.device: 'mps' is not available"):
        resolve_device("mps")


def test_the_run_device_holds_inside_the_block_only_and_leaves_cpu_tensors_as_they_are() -> None:
    # Prepare
    x = torch.ones(3)

    # Execute
    with computing_on("cpu") as device:
        inside, moved = compute_device(), to_device(x)

    # Assert
    assert device == inside == compute_device() == torch.device("cpu")
    assert moved is x


def test_a_generator_already_on_the_device_is_used_as_it_is() -> None:
    generator = torch.Generator().manual_seed(4)
    assert generator_on(torch.device("cpu"), generator) is generator


@CUDA
def test_on_cuda_values_move_there_deterministically_and_the_settings_are_restored_after() -> None:
    # Prepare
    before = torch.are_deterministic_algorithms_enabled()
    generator = torch.Generator().manual_seed(4)

    # Execute
    with computing_on("cuda"):
        moved = to_device(torch.nn.Linear(2, 2))
        deterministic = torch.are_deterministic_algorithms_enabled()
        drawn = generator_on(compute_device(), generator)

    # Assert
    assert {p.device.type for p in moved.parameters()} == {"cuda"}
    assert deterministic
    assert drawn.device.type == "cuda"
    assert torch.are_deterministic_algorithms_enabled() == before
    assert compute_device() == torch.device("cpu")
