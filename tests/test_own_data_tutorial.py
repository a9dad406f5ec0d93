"""docs/own-data.md: its commands run as written, from the example tables to predictions and interventions.

The commands are read from the page's ``bash`` blocks and run in order in a
fresh folder through the command line (in this process). The deployment
commands run in their own tests, which audit the table files each SuperNode opens.
"""

import json
import os
import shlex
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from fedmosaic.cli import app
from fedmosaic.deploy.processes import MARKER

PAGE = Path(__file__).resolve().parents[1] / "docs" / "own-data.md"

HOOK = f'''
import os, sys
_folder = os.environ.get("FEDMOSAIC_TEST_OPEN_AUDIT")
_marker = os.environ.get("{MARKER}", "")
if _folder and _marker:
    def _audit(event, args):
        if event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
            path = os.fsdecode(args[0])
            if path.endswith((".csv", ".parquet")):
                with open(os.path.join(_folder, str(os.getpid()) + ".log"), "a") as log:
                    log.write(_marker.split("/", 1)[1] + "\\t" + os.path.realpath(path) + "\\n")
    sys.addaudithook(_audit)
'''


def tutorial_commands(page: Path = PAGE) -> list[list[str]]:
    """The ``fedmosaic`` commands of the page's ``bash`` blocks, in order, as argument lists."""
    commands, inside = [], False
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            inside = line.strip() == "```bash"
            continue
        if inside and line.startswith("fedmosaic "):
            commands.append(shlex.split(line)[1:])
    return commands


def run_command(args: list[str]) -> str:
    """Run one command line and return its output; a failure shows it."""
    result = CliRunner().invoke(app, args, catch_exceptions=True)
    assert result.exit_code == 0, f"fedmosaic {shlex.join(args)}: {result.output}{result.exception!r}"
    return result.output


@pytest.mark.slow
def test_the_tutorials_commands_run_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Prepare
    monkeypatch.chdir(tmp_path)
    commands = [c for c in tutorial_commands() if c[0] != "deploy"]
    assert [c[0] for c in commands] == ["examples", "run", "predict", "intervene", "run", "predict"]
    # Execute
    for args in commands:
        run_command(args)
    # Assert: the run met the page's claims, and the model reads the schema's raw columns
    results = json.loads((tmp_path / "runs/asia/results.json").read_text())
    final = {run["name"]: run["final"] for run in results["runs"]}
    assert final["F-CMs"]["coverage"] == 1.0
    assert abs(final["F-CMs"]["accuracy"] - final["Centralized"]["accuracy"]) <= 0.02
    predictions = pd.read_csv(tmp_path / "runs/asia/predictions.csv")
    fixed = pd.read_csv(tmp_path / "runs/asia/if-smoking.csv")
    assert len(predictions) == len(fixed) == 20
    assert (fixed["smoke=yes"] == 1.0).all()
    assert not (predictions["smoke=yes"] == 1.0).all()
    vertical = {
        run["name"]: run["final"]["accuracy"]
        for run in json.loads((tmp_path / "runs/vertical/results.json").read_text())["runs"]
    }
    assert min(vertical["FALSE-VFL"], vertical["LASER-VFL"], vertical["PlugVFL"]) > vertical["Local"]
    across = pd.read_csv(tmp_path / "runs/vertical/predictions.csv")
    assert len(across) == 450
    assert set(across["parties"]) == {
        "clinic.csv",
        "clinic.csv;lab.csv",
        "clinic.csv;imaging.csv",
        "clinic.csv;lab.csv;imaging.csv",
    }


def test_the_raw_test_table_through_the_saved_model_gives_the_runs_accuracy(tmp_path: Path) -> None:
    """The model applies the federated scaling itself: raw rows in, the run's test accuracy out."""
    # Prepare
    from fedmosaic import load_model
    from fedmosaic.examples import copy_examples
    from fedmosaic.experiments.config import load_config
    from fedmosaic.experiments.presets import resolve_experiment
    from fedmosaic.experiments.runner import run_experiment

    copy_examples(tmp_path)
    source = resolve_experiment(str(tmp_path / "asia" / "asia.toml"))
    source |= {"federation": {"rounds": 2}, "runs": [{"name": "F-CMs", "method": "fcm"}]}
    results = run_experiment(load_config(source), tmp_path / "out")
    test = pd.read_csv(tmp_path / "asia" / "test.csv")
    model = load_model(tmp_path / "out" / "model" / "00-f-cms")
    # Execute
    probabilities = model.predict(test[[f"f{k}" for k in range(8)]]).table()
    # Assert
    predicted = (probabilities["dysp=yes"] > probabilities["dysp=no"]).map({True: "yes", False: "no"})
    accuracy = float((predicted.to_numpy() == test["dysp"].to_numpy()).mean())
    assert accuracy == pytest.approx(results["runs"][0]["final"]["accuracy"], abs=1e-6)


@pytest.fixture
def open_audit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[], dict[str, set[str]]]:
    """Every process of a deployment started from now on logs each table file it opens, with its node.

    Permissions prove nothing (the tests run as root): every process of the deployment carries a
    Python audit hook (a ``sitecustomize`` module on its path) that logs each table file it opens, with
    the deployment marker naming its node (inherited by the processes a SuperNode starts). Returns
    a function giving the names of the files each process (``node-<i>``, ``superlink``) opened.
    """
    hook, audit = tmp_path / "hook", tmp_path / "audit"
    hook.mkdir()
    audit.mkdir()
    (hook / "sitecustomize.py").write_text(HOOK)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(hook), os.environ.get("PYTHONPATH", "")) if p))
    monkeypatch.setenv("FEDMOSAIC_TEST_OPEN_AUDIT", str(audit))

    def opened() -> dict[str, set[str]]:
        files: dict[str, set[str]] = {}
        for log in audit.glob("*.log"):
            for line in log.read_text().splitlines():
                process, path = line.split("\t")
                files.setdefault(process, set()).add(Path(path).name)
        return files

    return opened


def _deploy_command(example: str) -> list[str]:
    """The page's one ``fedmosaic deploy`` command of ``example``."""
    deploy = [c for c in tutorial_commands() if c[0] == "deploy" and c[1].startswith(f"{example}/")]
    assert len(deploy) == 1
    return deploy[0]


@pytest.mark.slow
def test_each_supernode_opens_only_its_own_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, open_audit: Callable[[], dict[str, set[str]]]
) -> None:
    """The page's deployments use TLS and registered node keys.

    This is also the end-to-end test of a secured deployment (tests/deploy/test_local.py tests that
    an unregistered node is refused).
    """
    # Prepare
    monkeypatch.chdir(tmp_path)
    # Execute: the tutorial's commands, as written
    run_command(["examples", "."])
    output = run_command(_deploy_command("asia"))
    # Assert
    assert "(TLS, node auth)" in output
    results = json.loads((tmp_path / "runs/asia-flower/results.json").read_text())
    assert [row["replies"] for row in results["runs"][0]["history"]] == [3, 3]
    assert results["runs"][0]["final"]["coverage"] == 1.0
    assert (tmp_path / "runs/asia-flower/report.html").exists()
    opened = open_audit()
    asia = {p.name for p in (tmp_path / "asia").iterdir()}
    for node in range(3):
        own = {f"hospital-{node}.csv"} | ({"hospital-1-graph.csv"} if node == 1 else set())
        assert opened.get(f"node-{node}", set()) & asia == own, (node, opened)
    assert opened.get("superlink", set()) & asia == {"test.csv"}, opened


@pytest.mark.slow
def test_the_vertical_deployment_equals_the_in_process_run_and_each_party_opens_only_its_own_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, open_audit: Callable[[], dict[str, set[str]]]
) -> None:
    """Three parties, TLS and node keys: the clinic is the coordinator, the lab and the imaging centre a SuperNode each.

    The deployment's message logs are the in-process run's, whose contents
    tests/experiments/test_table_vertical.py checks for IDs and their hashes.
    """
    # Prepare
    monkeypatch.chdir(tmp_path)
    run_command(["examples", "."])
    deploy = _deploy_command("vertical")
    out = Path(deploy[deploy.index("--out") + 1])
    in_process = [a for a in deploy[1:] if a not in ("--tls", "--auth")]
    in_process[in_process.index("--out") + 1] = "runs/vertical-in-process"
    # Execute: the tutorial's command as written, then the same run in process
    output = run_command(deploy)
    run_command(["run", *in_process, "--quiet"])
    # Assert: the same results and the same messages
    assert "(TLS, node auth)" in output
    deployed, local = (
        json.loads((folder / "results.json").read_text()) for folder in (out, Path("runs/vertical-in-process"))
    )
    assert [run["final"] for run in deployed["runs"]] == [run["final"] for run in local["runs"]]
    for log in ("alignment.jsonl", "00-plugvfl-federated.jsonl"):
        assert (out / "messages" / log).read_text() == (Path("runs/vertical-in-process") / "messages" / log).read_text()
    # Assert: each passive party's node opened its own table only, the coordinator the clinic's only
    opened = open_audit()
    tables = {"clinic.csv", "lab.csv", "imaging.csv"}
    assert opened.get("node-0", set()) & tables == {"lab.csv"}, opened
    assert opened.get("node-1", set()) & tables == {"imaging.csv"}, opened
    assert opened.get("superlink", set()) & tables == {"clinic.csv"}, opened
    # Assert: each passive party's node wrote its part on its own disk; joined, the parts predict the run's accuracy
    from fedmosaic.experiments.config import load_config
    from fedmosaic.experiments.presets import resolve_experiment
    from fedmosaic.experiments.table_workload import prepare_tables_run
    from fedmosaic.experiments.workloads import prepare_workload

    model, joined = out / "model" / "00-plugvfl", Path("joined")
    shutil.copytree(model, joined)
    for node, part in ((0, "party-1"), (1, "party-2")):
        written = out / "site-states" / f"node-{node}" / "clinic-lab-imaging" / "model" / "00-plugvfl"
        assert sorted(p.name for p in written.iterdir()) == [f"{part}.json", f"{part}.safetensors"]
        assert not (model / f"{part}.safetensors").exists()
        for file in written.iterdir():
            shutil.copy(file, joined)
    run_command(
        ["predict", "joined", "vertical/clinic.csv", "vertical/lab.csv", "vertical/imaging.csv", "--out", "p.csv"]
    )
    config = load_config(resolve_experiment("vertical/vertical.toml"))
    test = prepare_tables_run(prepare_workload(config), config, None, {}).test_rows
    predicted = pd.read_csv("p.csv").iloc[test]
    labels = pd.read_csv("vertical/clinic.csv")["diagnosis"].to_numpy()[test]
    accuracy = float(
        (np.where(predicted["class=malignant"] > predicted["class=benign"], "malignant", "benign") == labels).mean()
    )
    assert accuracy == pytest.approx(deployed["runs"][0]["final"]["accuracy"], abs=1e-9)
