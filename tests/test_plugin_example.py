"""The example plugin (examples/fedmosaic-fedadam), installed as a user installs one: listed, run and tested.

pip builds the plugin with the venv's setuptools and installs it into a
temporary folder (``--target``; no network, the venv untouched), from a copy of
the example so that the build leaves nothing in the checkout. fedmosaic then
runs in subprocesses with that folder on ``PYTHONPATH``, where its entry
points are found as an installed distribution's. A second plugin, whose module
raises on import, shows that a broken plugin costs one warning line.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[1]
EXAMPLE = REPOSITORY / "examples" / "fedmosaic-fedadam"
PACKAGE = "fedmosaic-fedadam"
COMPONENTS = {("fedadam", PACKAGE), ("tiny-convnet", PACKAGE), ("blobs", PACKAGE)}
"""What the plugin adds, as ``fedmosaic presets`` lists it: (name, package)."""
BUILD_FILES = shutil.ignore_patterns("build", "*.egg-info", "__pycache__", ".pytest_cache")

BROKEN_PYPROJECT = """\
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "fedmosaic-broken"
version = "0.0.1"
dependencies = ["fedmosaic"]

[project.entry-points."fedmosaic.methods"]
broken = "fedmosaic_broken:METHOD"

[tool.setuptools]
packages = ["fedmosaic_broken"]
"""
BROKEN_MODULE = 'raise RuntimeError("fedmosaic-broken fails on import, on purpose")\n'


@dataclass(frozen=True)
class Installed:
    """The example's copy and the folders pip installed the two plugins into."""

    source: Path
    plugin: Path
    broken: Path


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """The example plugin and a broken one, each built and installed into a folder of its own."""
    root = tmp_path_factory.mktemp("plugins")
    source = root / "fedmosaic-fedadam"
    shutil.copytree(EXAMPLE, source, ignore=BUILD_FILES)
    broken = root / "fedmosaic-broken"
    (broken / "fedmosaic_broken").mkdir(parents=True)
    (broken / "pyproject.toml").write_text(BROKEN_PYPROJECT)
    (broken / "fedmosaic_broken" / "__init__.py").write_text(BROKEN_MODULE)
    _pip_install(source, root / "site-plugin")
    _pip_install(broken, root / "site-broken")
    return Installed(source, root / "site-plugin", root / "site-broken")


def _pip_install(project: Path, target: Path) -> None:
    """``pip install`` of ``project`` into ``target``, built with the venv's setuptools, without any index."""
    if importlib.util.find_spec("setuptools") is None:  # pip builds with the venv's own (--no-build-isolation)
        pytest.fail("setuptools is missing from the venv: pip needs it to build the example plugin without network")
    command = ["--no-deps", "--no-build-isolation", "--no-index", "--no-cache-dir", "--disable-pip-version-check"]
    result = subprocess.run(
        [sys.executable, "-m", "pip", "install", *command, "--quiet", "--target", str(target), str(project)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, f"pip could not install {project.name}: {result.stderr.strip()}"


def _environment(*paths: Path) -> dict[str, str]:
    """The environment of this process with ``paths`` first on PYTHONPATH, wide Rich tables, no outer pytest settings."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("PYTEST_")}
    env["PYTHONPATH"] = os.pathsep.join([*map(str, paths), *filter(None, [os.environ.get("PYTHONPATH")])])
    env["COLUMNS"] = "250"  # a table row keeps each name and package on one line
    return env


def _python(args: list[str], *paths: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=_environment(*paths), capture_output=True, text=True, timeout=180
    )


def _fedmosaic(args: list[str], *paths: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The ``fedmosaic`` command (its console script's entry point), with ``paths`` on PYTHONPATH."""
    return _python(["-c", "from fedmosaic.cli import main; main()", *args], *paths, cwd=cwd)


def _listed(presets: str) -> set[tuple[str, str]]:
    """The (name, package) pairs of the registry tables ``fedmosaic presets`` printed."""
    return {(words[0], words[1]) for words in map(str.split, presets.splitlines()) if len(words) >= 2}


def test_presets_lists_the_plugin_s_method_model_and_dataset_with_its_package(
    installed: Installed, tmp_path: Path
) -> None:
    # Execute
    result = _fedmosaic(["presets"], installed.plugin, cwd=tmp_path)

    # Assert
    assert result.returncode == 0, result.stderr
    assert _listed(result.stdout) >= COMPONENTS
    assert ("fedavg", "fedmosaic") in _listed(result.stdout)
    assert result.stderr == ""


def test_the_example_experiment_runs_from_the_command_line(installed: Installed, tmp_path: Path) -> None:
    # Prepare
    experiment = installed.source / "fedadam-blobs.toml"
    out = tmp_path / "run"

    # Execute
    result = _fedmosaic(
        ["run", str(experiment), "--quiet", "--out", str(out), "--set", "federation.rounds=3"],
        installed.plugin,
        cwd=tmp_path,
    )

    # Assert
    assert result.returncode == 0, result.stderr
    rows = json.loads((out / "summary.json").read_text())["rows"]
    assert [(row["name"], row["method"]) for row in rows] == [("FedAvg", "fedavg"), ("FedAdam", "fedadam")]
    assert all(0.0 <= row["accuracy"] <= 1.0 for row in rows)


def test_the_plugin_s_own_tests_pass_against_the_installed_plugin(installed: Installed, tmp_path: Path) -> None:
    # Execute: `pytest` in the plugin's folder (its docstring examples and tests/test_fedadam.py,
    # which runs fedmosaic's method contract on FedAdam through fedmosaic.testing.check_method)
    result = _python(
        ["-m", "pytest", "-rA", "-p", "no:cacheprovider", "--basetemp", str(tmp_path / "basetemp")],
        installed.plugin,
        cwd=installed.source,
    )

    # Assert
    assert result.returncode == 0, result.stdout[-3000:]
    passed = re.search(r"(\d+) passed", result.stdout)
    assert passed is not None
    assert int(passed.group(1)) >= 10
    assert "PASSED tests/test_fedadam.py::test_fedadam_passes_fedmosaic_s_method_contract" in result.stdout


def test_a_plugin_that_fails_to_import_costs_one_warning_line(installed: Installed, tmp_path: Path) -> None:
    # Execute: the broken plugin beside the example one
    result = _fedmosaic(["presets"], installed.plugin, installed.broken, cwd=tmp_path)

    # Assert: the built-ins and the working plugin listed, the broken one named once on stderr
    assert result.returncode == 0, result.stderr
    listed = _listed(result.stdout)
    assert ("fedavg", "fedmosaic") in listed
    assert listed >= COMPONENTS
    assert "broken" not in {name for name, _ in listed}
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("warning: plugin 'broken' of fedmosaic-broken (fedmosaic.methods) failed to import")
    assert lines[0].endswith("RuntimeError: fedmosaic-broken fails on import, on purpose")
