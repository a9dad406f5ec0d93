"""A deployment shared by the tests that can use the same one: a SuperLink and 4 SuperNodes on 127.0.0.1.

Starting a deployment costs seconds (processes, imports, the nodes'
first connection), so the tests of a module that need a plain (insecure)
deployment with one node per partition share one; they run in one xdist
group (``deployment``), hence in one worker and one deployment, which is
stopped when the module's tests are done (idle, its SuperNodes poll the
SuperLink once a second). Each test gets it with every
SuperNode running: a node an earlier test killed is started again
(:meth:`LocalDeployment.revive`).
"""

from collections.abc import Iterator
from pathlib import Path

import pytest

from fedmosaic.deploy.processes import LocalDeployment

NODES = 4
"""SuperNodes of the shared deployment (F-CMs on asia needs 4 clients; FedAvg uses the first 3)."""


@pytest.fixture(scope="module")
def shared_deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalDeployment]:
    """The module's deployment, stopped (every process it started) after the module's tests."""
    folder: Path = tmp_path_factory.mktemp("shared-deployment")
    with LocalDeployment(folder, NODES) as deployment:
        yield deployment
    assert deployment.remaining() == []


@pytest.fixture
def deployment(shared_deployment: LocalDeployment) -> LocalDeployment:
    """The shared deployment, with all its SuperNodes running."""
    shared_deployment.revive()
    return shared_deployment
