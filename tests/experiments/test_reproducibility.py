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
"""
"""Computes ``digest``: the concept layouts of a bnlearn workload (names, data, confidences of every client)."""

WORD = "fedmosaic"
"""A string whose hash tells two string hashings apart."""


def _digest_here() -> tuple[str, int]:
    """The layouts' digest in this process, and the hash of :data:`WORD` under this process's hashing."""
    namespace: dict = {}
    exec(DIGEST, namespace)
    return namespace["digest"].hexdigest(), hash(WORD)


def _digest_in_a_process(hash_seed: str) -> tuple[str, int]:
    """The layouts' digest in a fresh interpreter, and the hash of :data:`WORD` there, under ``PYTHONHASHSEED``."""
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    code = DIGEST + f"print(digest.hexdigest(), hash({WORD!r}))"
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    digest, word_hash = result.stdout.split()
    return digest, int(word_hash)


def test_concept_layouts_do_not_depend_on_string_hashing() -> None:
    # Prepare: a fresh interpreter with a fixed string hashing other than this process's
    seed = "2" if os.environ.get("PYTHONHASHSEED") == "1" else "1"

    # Execute
    here, here_hash = _digest_here()
    there, there_hash = _digest_in_a_process(seed)

    # Assert: the two hashings differ, the layouts do not
    assert there_hash != here_hash
    assert there == here
