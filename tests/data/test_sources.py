"""Specification of how the data directory is chosen and files are found in it."""

import gzip
from pathlib import Path

import pytest

from fedmosaic.data.sources import read_data_file, require_file, resolve_data_dir
from fedmosaic.errors import DataFileMissing, FedmosaicError


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """No FEDMOSAIC_DATA nor XDG_CACHE_HOME, and a home folder under tmp_path."""
    monkeypatch.delenv("FEDMOSAIC_DATA", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return monkeypatch


def test_explicit_folder_wins_over_the_environment(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # Prepare
    clean_env.setenv("FEDMOSAIC_DATA", str(tmp_path / "env"))

    # Execute
    chosen = resolve_data_dir(tmp_path / "flag")

    # Assert
    assert chosen == (tmp_path / "flag", "--data-dir")


def test_environment_variable_is_used_without_explicit_folder(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # Prepare
    clean_env.setenv("FEDMOSAIC_DATA", str(tmp_path / "env"))

    # Execute
    chosen = resolve_data_dir(None)

    # Assert
    assert chosen == (tmp_path / "env", "FEDMOSAIC_DATA")


def test_default_cache_folder_respects_xdg_cache_home(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # Prepare
    clean_env.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))

    # Execute
    chosen = resolve_data_dir(None)

    # Assert
    assert chosen == (tmp_path / "xdg" / "fedmosaic" / "data", "default cache folder")


def test_default_cache_folder_is_under_home_and_empty_values_count_as_unset(
    clean_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Prepare
    clean_env.setenv("FEDMOSAIC_DATA", "")
    clean_env.setenv("XDG_CACHE_HOME", "")

    # Execute
    chosen = resolve_data_dir("")

    # Assert
    assert chosen == (tmp_path / "home" / ".cache" / "fedmosaic" / "data", "default cache folder")


def test_require_file_returns_the_first_existing_candidate(tmp_path: Path) -> None:
    # Prepare
    (tmp_path / "set").mkdir()
    (tmp_path / "set" / "rows.data").write_text("1")

    # Execute
    found = require_file(
        tmp_path, "set/rows.data.gz", alternatives=("set/rows.data",), how_chosen="--data-dir", source_url="u"
    )

    # Assert
    assert found == tmp_path / "set" / "rows.data"


def test_missing_file_error_names_file_folder_choice_and_source(tmp_path: Path) -> None:
    # Prepare
    url = "https://example.org/set"

    # Execute
    with pytest.raises(DataFileMissing) as caught:
        require_file(tmp_path, "set/rows.data.gz", how_chosen="FEDMOSAIC_DATA", source_url=url)

    # Assert
    assert str(caught.value) == (
        f"data file not found: set/rows.data.gz (searched {tmp_path} (chosen by FEDMOSAIC_DATA); "
        f"the dataset is published at {url})"
    )


def test_read_data_file_decompresses_gzip_and_passes_plain_files_through(tmp_path: Path) -> None:
    # Prepare
    packed, plain = tmp_path / "a.gz", tmp_path / "b.data"
    packed.write_bytes(gzip.compress(b"packed"))
    plain.write_bytes(b"plain")

    # Execute
    contents = read_data_file(packed), read_data_file(plain)

    # Assert
    assert contents == (b"packed", b"plain")


@pytest.mark.parametrize(
    "content",
    [b"not gzip at all", gzip.compress(b"x" * 100, mtime=0)[:-10]],
    ids=["not-gzip", "truncated-gzip"],
)
def test_corrupt_gzip_is_reported_with_its_path(tmp_path: Path, content: bytes) -> None:
    # Prepare
    path = tmp_path / "broken.gz"
    path.write_bytes(content)

    # Execute
    with pytest.raises(FedmosaicError) as caught:
        read_data_file(path)

    # Assert
    assert str(caught.value).startswith(f"corrupt gzip file {path}: ")
