"""The Flower app written for a submission is one Flower accepts, and its run config carries the experiment."""

import tomllib
from pathlib import Path

from flwr.common.config import validate_config

from fedmosaic.deploy.processes import Connection, write_flwr_config
from fedmosaic.deploy.submit import write_app
from fedmosaic.experiments.flower_server import RUN_CONFIG_DEFAULTS, decode_experiment, encode_experiment


def test_the_app_names_fedmosaics_server_and_client_apps_and_flower_validates_it(tmp_path: Path) -> None:
    # Execute
    folder = write_app(tmp_path / "app")

    # Assert
    project = tomllib.loads((folder / "pyproject.toml").read_text())
    valid, errors, _ = validate_config(project, check_module=True, project_dir=folder)
    assert valid, errors
    assert project["project"]["dependencies"] == []
    assert project["tool"]["flwr"]["app"]["config"] == RUN_CONFIG_DEFAULTS


def test_the_experiment_travels_as_one_string_and_comes_back_unchanged() -> None:
    source = {"name": "x", "runs": [{"name": "a 'quoted' \"run\"", "method": "fedavg"}], "seed": 3}

    assert decode_experiment(encode_experiment(source)) == source


def test_the_flwr_configuration_is_insecure_without_a_certificate_authority(tmp_path: Path) -> None:
    plain = tomllib.loads(write_flwr_config(tmp_path / "a", "local", Connection("127.0.0.1:9000")).read_text())
    secure = tomllib.loads(
        write_flwr_config(tmp_path / "b", "local", Connection("127.0.0.1:9000", tmp_path / "ca.crt")).read_text()
    )

    assert plain["superlink"] == {"default": "local", "local": {"address": "127.0.0.1:9000", "insecure": True}}
    assert secure["superlink"]["local"] == {"address": "127.0.0.1:9000", "root-certificates": str(tmp_path / "ca.crt")}
