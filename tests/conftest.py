"""Test-wide settings.

Tests run in parallel workers (``pytest -n auto``) on few cores; one PyTorch
thread per process keeps workers from oversubscribing the cores. Subprocesses
started by tests inherit the setting through the environment, so their
numbers match the in-process ones bit for bit.
"""

import os

os.environ["OMP_NUM_THREADS"] = "1"
os.environ["MKL_NUM_THREADS"] = "1"
# Sampled concept splits are computed afresh, never read from or written to the user's cache.
os.environ["FEDMOSAIC_SPLITS_CACHE"] = "off"

import torch

torch.set_num_threads(1)

import functools  # noqa: E402
import importlib.util  # noqa: E402
import sys  # noqa: E402
from collections.abc import Callable, Iterator  # noqa: E402
from pathlib import Path  # noqa: E402
from types import ModuleType  # noqa: E402
from typing import Any  # noqa: E402

import pytest  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
"""Debian's chromium, the browser the browser tests drive (``make test`` installs it when missing)."""

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

SMALL_FCM_RUN = {
    "name": "fcm-small",
    "description": "F-CMs (C2BM) on asia: 4 clients, one joining at round 2, 3 rounds",
    "seed": 0,
    "data": {"dataset": "bnlearn", "network": "asia"},
    "concepts": {"num_clients": 4, "initial_clients": 3, "join_round": 2},
    "federation": {"rounds": 3},
    "train": {"epochs": 1, "batch_size": 256, "optimizer": "adam", "lr": 0.01},
    "runs": [{"name": "F-CMs", "method": "fcm", "params": {"model": {"family": "c2bm"}}}],
}
"""A small trained F-CMs run shared by the tests that need one (report and explorer in a browser)."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Put the ``slow`` (Flower) tests first, each group of tests otherwise in collection order.

    They are the longest tests and mostly wait on Flower's processes; started
    first, their waits overlap the other tests' work instead of leaving the
    last worker alone with one of them at the end of the run (the tutorial's
    deployment is collected last). ``--dist loadgroup`` still sends the
    largest ``xdist_group`` first.
    """
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


REPOSITORY = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def repository_script() -> Callable[[str], ModuleType]:
    """Loads a script of the repository (``benchmarks/<name>.py``, ``scripts/<name>.py``) as a module.

    The script's folder is importable while it loads (a benchmark imports its folder's helpers).
    """

    def load(relative: str) -> ModuleType:
        path = REPOSITORY / relative
        sys.path.insert(0, str(path.parent))
        try:
            spec = importlib.util.spec_from_file_location(f"{path.parent.name}_{path.stem}", path)
            assert spec is not None
            assert spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = module  # dataclasses look their module up there
            spec.loader.exec_module(module)
            return module
        finally:
            sys.path.remove(str(path.parent))

    return load


@pytest.fixture(scope="session")
def small_fcm_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The output folder of :data:`SMALL_FCM_RUN`, run once per test session (its autoencoder trained one epoch)."""
    from fedmosaic.data import bayesnet
    from fedmosaic.experiments import workloads
    from fedmosaic.experiments.config import load_config
    from fedmosaic.experiments.runner import run_experiment

    out = tmp_path_factory.mktemp("fcm-small") / "run"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(workloads, "sample_concept_splits", functools.partial(bayesnet.sample_concept_splits, epochs=1))
        run_experiment(load_config(SMALL_FCM_RUN), out)
    return out


@pytest.fixture(scope="session")
def chromium() -> Iterator[Any]:
    """Debian's chromium driven by Playwright; the test FAILS (never skips) when it cannot start."""
    from playwright.sync_api import Error, sync_playwright

    if not Path(CHROMIUM).is_file():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium (make test does: apt-get install -y chromium)")
    with sync_playwright() as playwright:
        try:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        except Error as error:
            pytest.fail(f"chromium does not start: {error}")
        yield browser
        browser.close()
