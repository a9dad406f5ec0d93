"""``fedmosaic explore`` on bad input: one line on stderr, exit code 2."""

import json
import shutil
import socket
import sys
from pathlib import Path

import pytest

from fedmosaic import cli

pytestmark = pytest.mark.xdist_group("small_fcm_run")  # one small trained run per worker


def _explore(*args: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    monkeypatch.setattr(sys, "argv", ["fedmosaic", "explore", *args])
    with pytest.raises(SystemExit) as exit_:
        cli.main()
    return int(exit_.value.code or 0), capsys.readouterr().err


def _copy_results(run: Path, to: Path, method: str | None = None) -> Path:
    results = json.loads((run / "results.json").read_text())
    for entry in results["runs"]:
        entry["method"] = method or entry["method"]
    to.mkdir()
    (to / "results.json").write_text(json.dumps(results))
    return to


def test_a_run_that_is_not_f_cms(small_fcm_run: Path, tmp_path: Path, monkeypatch, capsys) -> None:
    # Prepare
    run = _copy_results(small_fcm_run, tmp_path / "fedavg", method="fedavg")

    # Execute
    code, err = _explore(str(run), monkeypatch=monkeypatch, capsys=capsys)

    # Assert
    assert code == 2
    assert err == f"error: {run}: not an F-CMs run (methods: fedavg); explore needs method fcm\n"


def test_a_folder_with_no_model(small_fcm_run: Path, tmp_path: Path, monkeypatch, capsys) -> None:
    # Prepare
    run = _copy_results(small_fcm_run, tmp_path / "no-model")

    # Execute
    code, err = _explore(str(run), monkeypatch=monkeypatch, capsys=capsys)

    # Assert
    assert code == 2
    assert err.startswith(f"error: {run}: no F-CMs model in {run / 'model'}")
    assert err.count("\n") == 1


def test_a_folder_that_is_not_a_run(tmp_path: Path, monkeypatch, capsys) -> None:
    code, err = _explore(str(tmp_path), monkeypatch=monkeypatch, capsys=capsys)
    assert code == 2
    assert err.startswith(f"error: no results.json in {tmp_path}")
    assert err.count("\n") == 1


def test_a_busy_port(small_fcm_run: Path, tmp_path: Path, monkeypatch, capsys) -> None:
    # Prepare
    run = tmp_path / "run"
    shutil.copytree(small_fcm_run, run)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]

        # Execute
        code, err = _explore(str(run), "--port", str(port), monkeypatch=monkeypatch, capsys=capsys)

    # Assert
    assert code == 2
    assert err == f"error: --port: 127.0.0.1:{port} is in use; pick another port, or 0 for any free one\n"
