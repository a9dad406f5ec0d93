"""``fedmosaic deploy``: run an experiment on a Flower deployment started for it on 127.0.0.1."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fedmosaic.deploy.processes import LocalDeployment
from fedmosaic.deploy.submit import submit
from fedmosaic.deploy.supernode import POLL_INTERVAL_S, poll_interval
from fedmosaic.errors import ConfigError
from fedmosaic.experiments.config import ExperimentConfig, apply_overrides, load_config
from fedmosaic.experiments.outputs import check_out_dir
from fedmosaic.experiments.table_vertical import read_party
from fedmosaic.experiments.table_workload import NODE_FILE, NODE_GRAPH, node_workload
from fedmosaic.experiments.workloads import prepare_workload
from fedmosaic.federation.flower.site_state import STATE_DIR

SITE_STATES = "site-states"
"""Folder of the output folder where the nodes of ``fedmosaic deploy`` keep their client states (for ``--resume``)."""


def deploy_experiment(
    source: dict[str, Any],
    out_dir: Path,
    *,
    nodes: int | None = None,
    tls: bool = False,
    auth: bool = False,
    data_dir: Path | None = None,
    node_data_dir: str | None = None,
    node_file: str | None = None,
    node_graph: str | None = None,
    resume: bool = False,
    overwrite: bool = False,
    poll_interval_s: float = POLL_INTERVAL_S,
    write: Callable[[str], None] = lambda line: print(line, end="", flush=True),
) -> dict[str, Any]:
    """Start a SuperLink and one SuperNode per client, run the experiment on them, stop everything.

    Parameters
    ----------
    source : dict
        The raw experiment configuration; its engine is set to ``flower``.
    out_dir : Path
        Output folder.
    nodes : int or None
        SuperNodes to start; must equal the experiment's number of clients
        (the default).
    tls, auth : bool
        Secure the deployment: TLS with certificates generated on the spot;
        SuperNode keys generated and registered, unknown nodes refused.
    data_dir : Path or None
        The server's data folder (its test data).
    node_data_dir : str or None
        Each SuperNode's data folder; ``{node}`` stands for the node's index
        (e.g. ``sites/{node}``). Default: ``data_dir``.
    node_file, node_graph : str or None
        Experiments on sites' own tables: each SuperNode's own table and graph
        belief (given to the nodes whose site declares one); ``{node}`` stands
        for the node's index (e.g. ``hospital-{node}.csv``), on a vertical
        task node ``i`` being passive party ``i + 1``. Default: the
        experiment's files of the node's site or party.
    resume, overwrite : bool
        As for ``fedmosaic run``; each node keeps its client states in
        ``<out_dir>/site-states/node-<i>``, so that ``resume`` restores them.
    poll_interval_s : float, default POLL_INTERVAL_S
        Longest fixed wait of a SuperNode (:class:`LocalDeployment`); 3 keeps
        Flower's own waits.
    write : callable str -> None
        Receives the streamed progress.

    Returns
    -------
    dict
        The content of ``results.json``.

    Raises
    ------
    ConfigError
        If ``nodes`` differs from the number of clients, ``poll_interval_s``
        is out of range, the data cannot be laid out, or the output folder is
        occupied (all checked before any process starts).
    """
    source = apply_overrides(source, ["federation.engine=flower"])
    config = load_config(source)
    if nodes is not None and nodes != config.num_clients:
        raise ConfigError(
            "--nodes", f"must equal the experiment's number of clients ({config.num_clients}), got {nodes}"
        )
    poll_interval(poll_interval_s)
    prepare_workload(config, data_dir=data_dir)
    files = node_files(config, node_file, node_graph)
    check_node_tables(config, files)
    check_out_dir(out_dir, resume=resume, overwrite=overwrite)

    def node_config(index: int) -> dict[str, str]:
        folder = node_data_dir.replace("{node}", str(index)) if node_data_dir else data_dir
        return {
            **({} if folder is None else {"data-dir": str(Path(folder).resolve())}),
            STATE_DIR: str((out_dir / SITE_STATES / f"node-{index}").resolve()),
            **files.get(index, {}),
        }

    workdir = Path(tempfile.mkdtemp(prefix="fedmosaic-deploy-"))
    write(f"deployment files and logs: {workdir}\n")
    try:
        with LocalDeployment(
            workdir / "local",
            config.num_clients,
            tls=tls,
            auth=auth,
            node_config=node_config,
            log=lambda line: write(line + "\n"),
            poll_interval_s=poll_interval_s,
        ) as deployment:
            results = submit(
                source,
                out_dir,
                deployment.connection,
                workdir / "submit",
                data_dir=data_dir,
                resume=resume,
                overwrite=overwrite,
                write=write,
            )
    except BaseException:
        write(f"logs kept in {workdir / 'local' / 'logs'}\n")
        raise
    shutil.rmtree(workdir, ignore_errors=True)
    return results


def node_files(config: ExperimentConfig, node_file: str | None, node_graph: str | None) -> dict[int, dict[str, str]]:
    """Each node's own table (``data-file``) and graph belief (``graph-file``) node config.

    Node ``i`` is site ``i``, or on a vertical task passive party ``i + 1``.

    Raises
    ------
    ConfigError
        If the experiment has no site tables, a graph is given for a vertical
        task, or a node's file does not exist.
    """
    if node_file is None and node_graph is None:
        return {}
    tables = config.tables
    if tables is None:
        raise ConfigError("--node-file", "gives each node its own table: needs a [tables] experiment")
    if tables.kind == "vertical" and node_graph is not None:
        raise ConfigError("--node-graph", "gives each node its graph belief: needs a concept [tables] experiment")
    files: dict[int, dict[str, str]] = {}
    for index in range(tables.num_clients):
        graph = tables.kind != "vertical" and tables.sites[index].graph is not None
        entry = {}
        for option, key, pattern in (("--node-file", NODE_FILE, node_file), ("--node-graph", NODE_GRAPH, node_graph)):
            if pattern is None or (key == NODE_GRAPH and not graph):
                continue
            path = Path(pattern.replace("{node}", str(index))).resolve()
            if not path.is_file():
                raise ConfigError(option, f"node {index}: no such file: {path}")
            entry[key] = str(path)
        files[index] = entry
    return files


def check_node_tables(config: ExperimentConfig, files: dict[int, dict[str, str]]) -> None:
    """Read each node's own table as its node will (all on this machine), so a bad table stops the deployment before it starts.

    Raises
    ------
    ConfigError
        For the first bad table (as ``fedmosaic run`` reports it).
    """
    tables = config.tables
    if tables is None:
        return
    for index in range(tables.num_clients):
        if tables.kind == "vertical":
            read_party(tables, index + 1, files.get(index, {}).get(NODE_FILE))
        else:
            node_workload(config, index, files.get(index, {}), {}).sites[index]
