"""Same seed, same machine: same data and results, whatever Python's string hashing."""

import os
import subprocess
import sys

DIGEST = """
import hashlib
from fedmosaic.experiments.config import load_config
from fedmosaic.experiments.workloads import prepare_workload
config = load_config({"name": "r", "data": {"dataset": "bnlearn", "network": "sachs", "samples": 600},
                      "runs": [{"name": "F", "method": "fcm"}]})
workload = prepare_workload(config)
digest = hashlib.sha256()
for client in workload.clients:
    digest.update(repr(client.train.names).encode())
    digest.update(client.train.x.tobytes())
    digest.update(client.confidence.values.tobytes())
print(digest.hexdigest())
"""


def _digest(hash_seed: str) -> str:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    result = subprocess.run([sys.executable, "-c", DIGEST], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_concept_layouts_do_not_depend_on_string_hashing() -> None:
    assert _digest("1") == _digest("2")
