"""The vertical example: rows aligned by private set intersection, and no message carries an ID."""

import hashlib

import numpy as np
import pandas as pd

from fedmosaic.examples import copy_examples
from fedmosaic.experiments.config import load_config, method_params
from fedmosaic.experiments.presets import resolve_experiment
from fedmosaic.experiments.table_vertical import prepare_vertical_tables
from fedmosaic.federation import Federation, InProcessGrid, Message
from fedmosaic.methods.registry import get_method


def _message_bytes(message: Message) -> bytes:
    parts = [np.ascontiguousarray(a).tobytes() for a in message.arrays.values()]
    parts += [repr(sorted(message.config.items())).encode(), repr(sorted(message.metrics.items())).encode()]
    return b"\0".join(parts)


def _forms(identifier: str) -> list[bytes]:
    raw = identifier.encode()
    return [
        raw,
        hashlib.sha256(raw).digest(),
        hashlib.sha256(raw).hexdigest().encode(),
        hashlib.md5(raw).hexdigest().encode(),
    ]


def test_the_vertical_example_aligns_by_psi_and_no_message_carries_an_id(tmp_path) -> None:
    # Prepare
    copy_examples(tmp_path)
    folder = tmp_path / "vertical"
    source = resolve_experiment(str(folder / "vertical.toml"))
    source |= {
        "federation": {"rounds": 2},
        "runs": [{"name": "FALSE-VFL", "method": "false-vfl", "params": {"stage1_rounds": 1}}],
    }
    config = load_config(source)
    clinic = pd.read_csv(folder / "clinic.csv", dtype=str)["patient_id"].tolist()
    lab = pd.read_csv(folder / "lab.csv", dtype=str)["patient_id"].tolist()
    seen: list[Message] = []

    def observer(rnd: int, client: int, direction: str, message: Message) -> None:
        seen.append(message)

    # Execute: the alignment, then two rounds of FALSE-VFL (stage 1, then stage 2 and the test predictions)
    workload = prepare_vertical_tables(config, observer=observer)
    aligned = len(seen)
    (job,) = workload.jobs("federated", config)
    server, factory = get_method(config.runs[0].method).build(job.task, method_params(config, 0))
    with InProcessGrid(factory, config.seed) as grid:
        history = Federation(server, grid, job.schedule, seed=config.seed, rounds=2, observer=observer).run()
    # Assert: the lab holds exactly the clinic's rows whose ID it has
    data = workload.data
    both = set(clinic) & set(lab)
    rows = len(data.train) + len(data.tests["aligned"])
    assert rows == len(clinic)
    assert 0 < len(both) < len(clinic)
    assert int(data.train.present[:, 1].sum() + data.tests["aligned"].present[:, 1].sum()) == len(both)
    # Assert: no message of the alignment or of training carries an ID or an unkeyed hash of one
    assert aligned == 4
    assert len(seen) > aligned
    assert history[-1].metrics["accuracy"] > 0
    carried = b"\1".join(_message_bytes(m) for m in seen)
    for identifier in set(clinic) | set(lab):
        assert not any(form in carried for form in _forms(identifier)), identifier
