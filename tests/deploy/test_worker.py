"""A warm site's worker runs fedmosaic's ClientApp only; it takes tasks only with its SuperNode's secret."""

import io
import zipfile
from pathlib import Path

import pytest

from fedmosaic.deploy.security import make_secret
from fedmosaic.deploy.submit import write_app
from fedmosaic.deploy.worker import CLIENT_APP, check_app


def _bundle(pyproject: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("pyproject.toml", pyproject)
    return buffer.getvalue()


def test_the_app_fedmosaic_submits_is_accepted(tmp_path: Path) -> None:
    pyproject = (write_app(tmp_path) / "pyproject.toml").read_text()

    check_app(_bundle(pyproject))


def test_an_app_naming_another_client_app_is_refused(tmp_path: Path) -> None:
    pyproject = (write_app(tmp_path) / "pyproject.toml").read_text().replace(CLIENT_APP, "evil.module:app")

    with pytest.raises(
        ValueError, match=r"runs only fedmosaic\.experiments\.flower_client:client_app.*evil\.module:app"
    ):
        check_app(_bundle(pyproject))


def test_the_secret_is_32_random_bytes_readable_by_its_owner_only(tmp_path: Path) -> None:
    first, second = make_secret(tmp_path / "a"), make_secret(tmp_path / "b")

    assert len(first.read_bytes()) == 32
    assert first.read_bytes() != second.read_bytes()
    assert first.stat().st_mode & 0o777 == 0o600
