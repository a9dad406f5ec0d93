"""What the command line imports: its help, ``presets`` and a configuration error leave the heavy libraries unloaded.

Each command runs in a fresh interpreter, which reports the top-level
packages it imported when the command ends; the command's own answer is
checked too, so that a command that fails early cannot pass for a fast one.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("torch", "flwr", "ray", "pandas", "matplotlib", "opacus", "pgmpy", "sklearn", "scipy", "mlflow", "grpc")
"""Libraries that only a run, a report, a deployment or a prediction needs."""

MARK = "imported-packages:"

PROBE = f"""
import sys
from fedmosaic.cli import main
try:
    main()
finally:
    print({MARK!r}, *sorted({{name.split(".")[0] for name in sys.modules}}), file=sys.stderr)
"""
"""Runs the command line, then prints the top-level packages in ``sys.modules`` on standard error."""


def _command(tmp_path: Path, *args: str) -> tuple[int, str, str, set[str]]:
    """Exit code, standard output, standard error (without the report) and imported packages of ``fedmosaic args``."""
    env = {**os.environ, "FEDMOSAIC_DATA": str(tmp_path / "no-data-here")}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    lines = done.stderr.splitlines()
    assert lines, "the probe printed nothing"
    assert lines[-1].startswith(MARK), done.stderr
    return done.returncode, done.stdout, "\n".join(lines[:-1]), set(lines[-1].split()[1:])


@pytest.mark.parametrize(
    ("args", "code", "answer"),
    [
        (["--help"], 0, "Run an experiment"),
        (["run", "--help"], 0, "--set"),
        (["presets"], 0, "fcm-asia"),
        (["run", "digits-fedavg", "--set", "foo=1"], 2, "error: foo: unknown key"),
        (["run", "digits-fedavg", "--set", "foo"], 2, "error: --set: expected key=value, got 'foo'"),
        (["run", "digits-fedavg", "--set", "train.lr=-1"], 2, "error: train.lr: input should be greater than 0"),
        (["run", "fcm-asia", "--set", "runs.0.params.gamma=x"], 2, "error: runs.0.params.gamma:"),
        (["run", "fedcfa-simpson", "--set", "model.kind=transformer"], 2, "error: model.kind: unknown model"),
        (["run", "no-such-preset"], 2, "error: experiment: 'no-such-preset' is neither a preset"),
        (["deploy", "digits-fedavg", "--set", "foo=1"], 2, "error: foo: unknown key"),
    ],
    ids=lambda value: " ".join(value) if isinstance(value, list) else None,
)
def test_the_help_presets_and_a_configuration_error_import_no_heavy_library(
    tmp_path: Path, args: list[str], code: int, answer: str
) -> None:
    # Execute
    returncode, out, err, imported = _command(tmp_path, *args)

    # Assert
    assert returncode == code, err
    assert answer in (out if code == 0 else err)
    assert not imported & set(HEAVY), f"fedmosaic {' '.join(args)} imported {sorted(imported & set(HEAVY))}"


def test_the_probe_sees_a_heavy_library_that_a_command_imports(tmp_path: Path) -> None:
    # Execute: `report` on a folder without results loads the report's figures (matplotlib) before it refuses it
    returncode, _, err, imported = _command(tmp_path, "report", str(tmp_path))

    # Assert
    assert returncode == 2, err
    assert "matplotlib" in imported
