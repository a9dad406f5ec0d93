"""An output folder's replacement (``--overwrite``) survives a kill at any step."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fedmosaic.experiments.outputs import claim_out_dir

OLD = {"name": "tiny", "seed": 0}
NEW = {"name": "tiny", "seed": 1}


def _finished_run(folder: Path, seed: int, *, with_checkpoints: bool) -> None:
    (folder / "results.json").write_text(json.dumps({"seed": seed}))
    (folder / "report.md").write_text(f"report of seed {seed}")
    if with_checkpoints:
        (folder / "checkpoints").mkdir()
        (folder / "checkpoints" / "round-1.pt").write_bytes(b"old state")


def _files(folder: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(folder)): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file() and path.name != ".fedmosaic.lock"
    }


class _Killed(BaseException):
    """Stands for the process dying: nothing after it runs."""


def _overwrite_killed_after(out: Path, renames: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Overwrite the run in ``out`` with seed 1's, dying at the ``renames``-th rename of the swap."""
    real_rename = Path.rename
    done = [0]

    def rename(self: Path, target: Any) -> Path:
        if done[0] == renames:
            raise _Killed
        done[0] += 1
        return real_rename(self, target)

    def overwrite() -> None:
        with claim_out_dir(out, NEW, resume=False, overwrite=True) as folder:
            _finished_run(folder.path, 1, with_checkpoints=False)
            monkeypatch.setattr(Path, "rename", rename)

    with pytest.raises(_Killed):
        overwrite()
    monkeypatch.setattr(Path, "rename", real_rename)


def _overwritten_uninterrupted(tmp_path: Path) -> dict[str, bytes]:
    out = tmp_path / "uninterrupted"
    out.mkdir()
    _finished_run(out, 0, with_checkpoints=True)
    with claim_out_dir(out, NEW, resume=False, overwrite=True) as folder:
        _finished_run(folder.path, 1, with_checkpoints=False)
    return _files(out)


# The swap renames 3 old files out, then 3 new files in (config.toml, results.json, report.md),
# then the emptied folder of old files: a kill before any of the 7 renames.
@pytest.mark.parametrize("renames", range(7))
def test_an_overwrite_killed_during_the_swap_is_completed_by_the_next_claim(
    renames: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Prepare: a finished run, replaced by a completed one, the process killed mid-swap
    expected = _overwritten_uninterrupted(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    _finished_run(out, 0, with_checkpoints=True)
    _overwrite_killed_after(out, renames, monkeypatch)
    # Execute: the next run in the folder (here a resume of the new experiment)
    with claim_out_dir(out, NEW, resume=True, overwrite=False) as folder:
        finished = folder.finished
    # Assert: the new run, whole, and nothing of the old one nor of the swap
    assert finished == {"seed": 1}
    assert _files(out) == expected
    assert sorted(path.name for path in out.iterdir()) == [
        ".fedmosaic.lock",
        "config.toml",
        "report.md",
        "results.json",
    ]


def test_an_overwrite_whose_new_run_fails_leaves_the_old_run_as_it_was(tmp_path: Path) -> None:
    # Prepare
    out = tmp_path / "out"
    out.mkdir()
    _finished_run(out, 0, with_checkpoints=True)
    before = _files(out)

    def failing_overwrite() -> None:
        with claim_out_dir(out, NEW, resume=False, overwrite=True) as folder:
            (folder.path / "report.md").write_text("half a report")
            raise RuntimeError("round 1 failed")

    # Execute
    with pytest.raises(RuntimeError):
        failing_overwrite()
    # Assert
    assert _files(out) == before
    assert not (out / ".replacing").exists()


def test_a_resume_of_the_old_run_after_a_completed_overwrite_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    _finished_run(out, 0, with_checkpoints=False)
    with claim_out_dir(out, NEW, resume=False, overwrite=True) as folder:
        _finished_run(folder.path, 1, with_checkpoints=False)
    with pytest.raises(ValueError, match="--resume"), claim_out_dir(out, OLD, resume=True, overwrite=False):
        pass
