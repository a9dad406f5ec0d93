"""The vertical example: rows aligned by private set intersection, no message carries an ID, a node serves its own rows."""

import hashlib

import numpy as np
import pandas as pd
from flwr.app import Context, RecordDict

from fedmosaic.examples import copy_examples
from fedmosaic.experiments.config import load_config, method_params
from fedmosaic.experiments.flower_client import client_logic
from fedmosaic.experiments.inprocess_engine import JobSpec, job_key
from fedmosaic.experiments.presets import resolve_experiment
from fedmosaic.experiments.table_vertical import ALIGNMENT, prepare_vertical_tables, read_party
from fedmosaic.experiments.table_workload import NODE_FILE
from fedmosaic.federation import ClientContext, ClientState, Federation, InProcessGrid, Message
from fedmosaic.federation.flower.site_state import STATE_DIR, SiteStates
from fedmosaic.methods.registry import get_method
from fedmosaic.preparation.alignment import align


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
    imaging = pd.read_csv(folder / "imaging.csv", dtype=str)["patient_id"].tolist()
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
    # Assert: the lab and the imaging centre hold exactly the clinic's rows whose ID they have
    data = workload.data
    rows = len(data.train) + len(data.tests["aligned"])
    assert rows == len(clinic)
    for party, ids in enumerate((lab, imaging), start=1):
        both = set(clinic) & set(ids)
        assert 0 < len(both) < len(clinic)
        assert int(data.train.present[:, party].sum() + data.tests["aligned"].present[:, party].sum()) == len(both)
    # Assert: no message of the alignment or of training carries an ID or an unkeyed hash of one
    assert aligned == 8  # two exchanges, down and up, per passive party
    assert len(seen) > aligned
    assert history[-1].metrics["accuracy"] > 0
    carried = b"\1".join(_message_bytes(m) for m in seen)
    for identifier in set(clinic) | set(lab) | set(imaging):
        assert not any(form in carried for form in _forms(identifier)), identifier


def test_a_restarted_node_serves_the_rows_its_alignment_left_on_its_disk(tmp_path) -> None:
    """A SuperNode's memory (``context.state``) is lost on restart; its row alignment is on its disk.

    The node, given only its own table, rebuilds the passive party the in-process run builds: the
    same reply to the same request.
    """
    # Prepare: the example's alignment, the lab's state saved on its disk as its node saves it
    copy_examples(tmp_path)
    source = resolve_experiment(str(tmp_path / "vertical" / "vertical.toml"))
    source |= {"federation": {"rounds": 1}, "runs": [{"name": "LASER-VFL", "method": "laser-vfl"}]}
    config = load_config(source)
    workload = prepare_vertical_tables(config)
    document = config.model_dump(mode="json", exclude_none=True)
    clinic, _, _ = read_party(config.tables, 0)
    lab, _, _ = read_party(config.tables, 1)
    _, ((rows, positions),) = align(clinic, [lab], config.seed)
    state = ClientState(arrays={"rows": rows, "positions": positions}, config={"active_rows": len(clinic)})
    SiteStates(tmp_path / "node-0").save(job_key(document, 0, ALIGNMENT), 0, 1, state)
    (job,) = workload.jobs("federated", config)
    _, factory = get_method("laser-vfl").build(job.task, method_params(config, 0))
    spec = JobSpec(document, 0, job.label, job.schedule, config.seed, factory, extra=workload.header())
    node = Context(
        run_id=2,
        node_id=5,
        node_config={
            "partition-id": 0,
            STATE_DIR: str(tmp_path / "node-0"),
            NODE_FILE: str(tmp_path / "vertical" / "lab.csv"),
        },
        state=RecordDict(),
        run_config={},
    )
    request = Message(arrays={"rows": np.arange(40)}, config={"action": "embed", "split": "train"})
    context = ClientContext(0, 1, 123)

    # Execute
    expected = factory(0).handle(request.read_only(), ClientState(), context)
    reply = client_logic(spec.header() | {"round": 1, "client": 0}, 0, node).handle(
        request.read_only(), ClientState(), context
    )

    # Assert
    assert sorted(reply.arrays) == sorted(expected.arrays)
    for name in expected.arrays:
        np.testing.assert_array_equal(reply.arrays[name], expected.arrays[name])
