"""The ``fedmosaic`` command line: run, deploy, presets, report, demo.

Each command imports what it uses: the help, ``presets`` and a configuration
error answer without loading PyTorch, Flower, pandas or matplotlib, which a
run, a report or a prediction loads when it reaches them.
"""

from __future__ import annotations

import shlex
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from typing_extensions import override

from fedmosaic.deploy.supernode import POLL_INTERVAL_S
from fedmosaic.errors import ConfigError, FedmosaicError
from fedmosaic.experiments.progress import ProgressSink

if TYPE_CHECKING:
    import pandas as pd

    from fedmosaic.experiments.config import ExperimentConfig
    from fedmosaic.federation import RoundRecord
    from fedmosaic.models.loaded import LoadedModel

DEMO_PRESET = "fcm-asia"
TrackOption = Annotated[
    list[str] | None,
    typer.Option(help="Log the finished run to an experiment tracker: mlflow or tensorboard (repeatable)."),
]
DeviceOption = Annotated[
    str | None,
    typer.Option(help="Train and evaluate on cpu, cuda, cuda:N, mps or auto (overrides train.device)."),
]
TrustCodeOption = Annotated[
    bool, typer.Option(help="Import the module a model built by your own factory needs (its card names it).")
]
TrustChangedCodeOption = Annotated[
    bool, typer.Option(help="With --trust-code: load even if that module's source changed since training.")
]
TrackingUriOption = Annotated[
    str | None,
    typer.Option(help="--track mlflow: the tracking URI (default: MLFLOW_TRACKING_URI if set, else OUT/mlflow.db)."),
]

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="fedmosaic: federated learning when every participant holds a different piece of the data.",
)
out_console = Console()
err_console = Console(stderr=True)


class RichProgress(ProgressSink):
    """Shows one progress bar per run: rounds done, latest metrics, elapsed time and ETA.

    Runs of a grid point are removed when the next point starts, those
    still running (parallel jobs) stay.
    """

    def __init__(self, console: Console) -> None:
        self._progress = Progress(
            TextColumn("[bold]{task.description:<14}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[status]}"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=console,
        )
        self._tasks: dict[str, TaskID] = {}
        self._finished: set[str] = set()
        self._grid: TaskID | None = None
        self._grid_total = 0

    def __enter__(self) -> RichProgress:
        self._progress.start()
        return self

    @override
    def start_point(self, index: int, total: int, label: str) -> None:
        for name in self._finished:
            self._progress.remove_task(self._tasks.pop(name))
        self._finished.clear()
        if self._grid is None:
            self._grid = self._progress.add_task("grid", total=total, status="")
            self._grid_total = total
        self._progress.update(self._grid, completed=index, status=label)

    @override
    def start_run(self, name: str, total_rounds: int) -> None:
        self._tasks[name] = self._progress.add_task(name, total=total_rounds, status="")

    @override
    def advance(self, name: str, record: RoundRecord) -> None:
        shown = {k: v for k, v in record.metrics.items() if k in ("accuracy", "loss")}
        status = f"round {record.round}" + "".join(f"  {k} {v:.3f}" for k, v in shown.items())
        if record.status != "ok":
            status += f"  [yellow]skipped: {record.reason}[/]"
        self._progress.update(self._tasks[name], advance=1, status=status)

    @override
    def finish_run(self, name: str) -> None:
        self._progress.update(self._tasks[name], status="[green]done[/]")
        self._finished.add(name)

    def __exit__(self, error_type: object, *exc: object) -> None:
        if self._grid is not None and error_type is None:
            self._progress.update(self._grid, completed=self._grid_total, status="[green]done[/]")
        self._progress.stop()


@app.command()
def run(
    experiment: Annotated[str, typer.Argument(help="A preset name (see `fedmosaic presets`) or a TOML file.")],
    set_: Annotated[list[str] | None, typer.Option("--set", help="Override a key: --set partition.alpha=0.1")] = None,
    out: Annotated[Path | None, typer.Option(help="Output folder (default: runs/<name>).")] = None,
    seed: Annotated[int | None, typer.Option(help="Experiment seed (overrides the config).")] = None,
    data_dir: Annotated[
        Path | None, typer.Option(help="Data folder (default: $FEDMOSAIC_DATA, then the cache folder).")
    ] = None,
    resume: Annotated[bool, typer.Option(help="Continue an interrupted run in --out.")] = False,
    overwrite: Annotated[bool, typer.Option(help="Replace a run already in --out.")] = False,
    quiet: Annotated[bool, typer.Option(help="No progress display.")] = False,
    jobs: Annotated[
        int,
        typer.Option(min=1, help="Run the independent runs (grid points, compared runs) in N parallel processes."),
    ] = 1,
    engine: Annotated[
        str | None, typer.Option(help="inprocess, flower-simulation or flower (overrides federation.engine).")
    ] = None,
    superlink: Annotated[
        str | None, typer.Option(help="Engine flower: the SuperLink's HOST:PORT (its ServerApp writes --out).")
    ] = None,
    root_certificates: Annotated[
        Path | None, typer.Option(help="Engine flower: CA certificate of a TLS SuperLink (default: insecure).")
    ] = None,
    device: DeviceOption = None,
    track: TrackOption = None,
    tracking_uri: TrackingUriOption = None,
) -> None:
    """Run an experiment and write results.json, summary.json and a report."""
    overrides = list(set_ or []) + ([f"seed={seed}"] if seed is not None else []) + _device_override(device)
    overrides += [f"federation.engine={engine}"] if engine is not None else []
    overrides += ["federation.engine=flower"] if superlink is not None and engine is None else []
    source, config = _load_experiment(experiment, overrides, track)
    out_dir = out or Path("runs") / config.name
    if superlink is not None and config.federation.engine != "flower":
        raise ConfigError("--superlink", f"needs federation.engine = flower, got {config.federation.engine}")
    from fedmosaic.devices import resolve_device  # the configuration is valid: the run's runtime loads
    from fedmosaic.experiments.runner import run_experiment

    if superlink is not None:  # the deployment's machines resolve train.device each for itself
        results = _run_on_superlink(source, out_dir, superlink, root_certificates, data_dir, resume, overwrite)
    elif quiet:
        results = run_experiment(config, out_dir, data_dir=data_dir, resume=resume, overwrite=overwrite, jobs=jobs)
    else:
        resolve_device(config.train.device)  # refused before the progress display starts
        with RichProgress(err_console) as progress:
            results = run_experiment(
                config, out_dir, data_dir=data_dir, resume=resume, overwrite=overwrite, progress=progress, jobs=jobs
            )
    _print_summary(results)
    out_console.print(
        f"results: {out_dir / 'results.json'}\nreport:  {out_dir / 'report.html'}", highlight=False, soft_wrap=True
    )
    _track(out_dir, results, track, tracking_uri)


@app.command()
def deploy(
    experiment: Annotated[str, typer.Argument(help="A preset name (see `fedmosaic presets`) or a TOML file.")],
    nodes: Annotated[
        int | None, typer.Option(help="SuperNodes to start, one per client (default: the experiment's clients).")
    ] = None,
    tls: Annotated[bool, typer.Option(help="TLS with a certificate authority generated on the spot.")] = False,
    auth: Annotated[bool, typer.Option(help="Generate and register SuperNode keys; refuse unknown nodes.")] = False,
    set_: Annotated[list[str] | None, typer.Option("--set", help="Override a key: --set federation.rounds=3")] = None,
    out: Annotated[Path | None, typer.Option(help="Output folder (default: runs/<name>).")] = None,
    data_dir: Annotated[Path | None, typer.Option(help="The server's data folder.")] = None,
    node_data_dir: Annotated[
        str | None,
        typer.Option(help="Each SuperNode's data folder; {node} stands for its index (default: --data-dir)."),
    ] = None,
    node_file: Annotated[
        str | None,
        typer.Option(help="[tables] experiments: each SuperNode's own table, e.g. 'hospital-{node}.csv'."),
    ] = None,
    node_graph: Annotated[
        str | None, typer.Option(help="[tables] experiments: the graph belief of each node whose site has one.")
    ] = None,
    resume: Annotated[bool, typer.Option(help="Continue an interrupted run in --out.")] = False,
    overwrite: Annotated[bool, typer.Option(help="Replace a run already in --out.")] = False,
    poll_interval: Annotated[
        float,
        typer.Option(help="Longest fixed wait of a SuperNode in seconds, 0.05 to 3 (3: Flower's own 3 s and 0.5 s)."),
    ] = POLL_INTERVAL_S,
    device: DeviceOption = None,
    track: TrackOption = None,
    tracking_uri: TrackingUriOption = None,
) -> None:
    """Run an experiment on a Flower SuperLink and SuperNodes started on 127.0.0.1, then stop them."""
    source, config = _load_experiment(experiment, list(set_ or []) + _device_override(device), track)
    from fedmosaic.deploy.local import deploy_experiment  # the configuration is valid: the deployment's runtime loads
    from fedmosaic.devices import resolve_device

    resolve_device(config.train.device)  # the nodes run here: a device this machine lacks is refused first
    out_dir = out or Path("runs") / config.name
    results = deploy_experiment(
        source,
        out_dir,
        nodes=nodes,
        tls=tls,
        auth=auth,
        data_dir=data_dir,
        node_data_dir=node_data_dir,
        node_file=node_file,
        node_graph=node_graph,
        resume=resume,
        overwrite=overwrite,
        poll_interval_s=poll_interval,
        write=lambda line: err_console.out(line, end="", highlight=False),
    )
    _print_summary(results)
    out_console.print(
        f"results: {out_dir / 'results.json'}\nreport:  {out_dir / 'report.html'}", highlight=False, soft_wrap=True
    )
    _track(out_dir, results, track, tracking_uri)


@app.command(name="track")
def track_command(
    out: Annotated[Path, typer.Argument(help="A finished run's output folder (with results.json).")],
    backend: Annotated[str, typer.Option("--to", help="mlflow or tensorboard.")] = "mlflow",
    tracking_uri: TrackingUriOption = None,
) -> None:
    """Log a finished run (or grid) to an experiment tracker."""
    from fedmosaic.report.load import load_results

    results = load_results(out)
    if not {"runs", "points"} & set(results):
        raise FedmosaicError(f"{out / 'results.json'}: holds neither runs nor grid points")
    _track(out, results, [backend], tracking_uri)


def _load_experiment(
    experiment: str, overrides: list[str], backends: list[str] | None
) -> tuple[dict[str, Any], ExperimentConfig]:
    """The raw configuration of ``experiment`` with ``overrides``, and its validation; the trackers named checked first.

    Raises
    ------
    ConfigError
        Naming the first offending field or option.
    """
    from fedmosaic.experiments.config import apply_overrides, load_config
    from fedmosaic.experiments.presets import experiment_folder, resolve_experiment, resolve_model_code
    from fedmosaic.tracking import check_backend

    for backend in backends or []:
        check_backend(backend)
    source = resolve_model_code(
        apply_overrides(resolve_experiment(experiment), overrides), experiment_folder(experiment)
    )
    return source, load_config(source)


def _device_override(device: str | None) -> list[str]:
    """``--device``: the ``--set`` override of ``train.device`` it stands for."""
    return [] if device is None else [f"train.device={device}"]


def _track(out_dir: Path, results: dict[str, Any], backends: list[str] | None, uri: str | None) -> None:
    from fedmosaic.tracking import track

    for backend in backends or []:
        out_console.print(track(out_dir, results, backend, uri), highlight=False, soft_wrap=True)


def _run_on_superlink(
    source: dict[str, Any],
    out_dir: Path,
    superlink: str,
    root_certificates: Path | None,
    data_dir: Path | None,
    resume: bool,
    overwrite: bool,
) -> dict[str, Any]:
    from fedmosaic.deploy.processes import Connection
    from fedmosaic.deploy.submit import submit
    from fedmosaic.experiments.outputs import check_out_dir

    check_out_dir(out_dir, resume=resume, overwrite=overwrite)
    with tempfile.TemporaryDirectory(prefix="fedmosaic-submit-") as workdir:
        return submit(
            source,
            out_dir,
            Connection(superlink, root_certificates.resolve() if root_certificates else None),
            Path(workdir),
            data_dir=data_dir,
            resume=resume,
            overwrite=overwrite,
            write=lambda line: err_console.out(line, end="", highlight=False),
        )


@app.command()
def demo(
    out: Annotated[Path, typer.Option(help="Output folder.")] = Path("runs/demo"),
    overwrite: Annotated[bool, typer.Option(help="Replace a run already in --out.")] = False,
) -> None:
    """Run the demo experiment (no download needed), then show how to use its F-CMs model."""
    from fedmosaic.models.files import EXAMPLES
    from fedmosaic.models.loader import MODEL_DIR, load_model

    if not overwrite and out.is_dir() and any(out.iterdir()):
        raise ConfigError("--out", f"{out} is not empty; pass --overwrite to replace the demo run there")
    run(DEMO_PRESET, out=out, overwrite=overwrite)
    folder = min((out / MODEL_DIR).iterdir())  # the first run's: F-CMs
    model = load_model(folder)
    concept, categories = next(iter(model.concepts.items()))
    out_console.print(f"model:   {folder}", highlight=False, soft_wrap=True)
    out_console.print(
        f"try:     fedmosaic intervene {shlex.quote(str(folder))} {shlex.quote(str(folder / EXAMPLES))} --set {concept}={categories[0]}",
        highlight=False,
        soft_wrap=True,
    )
    out_console.print(f"explore: fedmosaic explore {shlex.quote(str(out))}", highlight=False, soft_wrap=True)


@app.command()
def explore(
    run_dir: Annotated[Path, typer.Argument(help="The output folder of an F-CMs run (it holds model/).")],
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port on 127.0.0.1; 0 for any free one.")] = 8765,
    run_name: Annotated[
        str | None, typer.Option("--run", help="Which F-CMs run's model (default: the first federated one).")
    ] = None,
) -> None:
    """Open a local page over the run's F-CMs model: pick a row, set concepts, watch the graph answer."""
    from fedmosaic.explore import open_run
    from fedmosaic.explore.serve import serve

    explorer = open_run(run_dir, run_name)
    serve(explorer, port, lambda url: out_console.print(f"explore: {url}  (Ctrl-C to stop)", highlight=False))


@app.command()
def predict(
    model_dir: Annotated[Path, typer.Argument(help="A model folder (or a run folder holding one model).")],
    inputs: Annotated[
        list[Path],
        typer.Argument(
            metavar="INPUT...",
            help="Examples, one per row: .npy, .npz (its x), .csv or .parquet; for a vertical model trained on parties' own"
            " tables, one table per party (ID column and the party's columns; the active party's is required).",
        ),
    ],
    out: Annotated[Path | None, typer.Option(help="CSV to write (default: standard output).")] = None,
    trust_code: TrustCodeOption = False,
    trust_changed_code: TrustChangedCodeOption = False,
) -> None:
    """Predict with a saved model: one CSV column per class (and concept) probability."""
    _write_table(_load(model_dir, trust_code, trust_changed_code), inputs, None, out)


@app.command()
def intervene(
    model_dir: Annotated[Path, typer.Argument(help="An F-CMs model folder (or a run folder holding one model).")],
    inputs: Annotated[
        Path, typer.Argument(metavar="INPUT", help="Examples, one per row: .npy, .npz (its x), .csv or .parquet.")
    ],
    set_: Annotated[
        list[str] | None, typer.Option("--set", help="Fix a concept for every row: --set smoke=yes (repeatable).")
    ] = None,
    out: Annotated[Path | None, typer.Option(help="CSV to write (default: standard output).")] = None,
    trust_code: TrustCodeOption = False,
    trust_changed_code: TrustChangedCodeOption = False,
) -> None:
    """Predict with concepts fixed: their descendants and the task are recomputed through the graph."""
    from fedmosaic.models.apply import parse_settings

    values = parse_settings(list(set_ or []))
    _write_table(_load(model_dir, trust_code, trust_changed_code), [inputs], values, out)


def _load(model_dir: Path, trust_code: bool, trust_changed_code: bool) -> LoadedModel:
    from fedmosaic.models.loader import load_model

    return load_model(model_dir, trust_code=trust_code, allow_changed_code=trust_changed_code)


def _write_table(model: LoadedModel, inputs: list[Path], values: dict[str, str] | None, out: Path | None) -> None:
    from fedmosaic.models.party_tables import party_tables_prediction, reads_party_tables

    if out is not None:
        for path in inputs:
            _check_table_out(out, path, model.folder)
    if values is None and reads_party_tables(model):
        table = party_tables_prediction(model, inputs)
    elif len(inputs) == 1:
        table = _predicted_rows(model, inputs[0], values)
    else:
        raise ConfigError("INPUT", f"this model reads one input file, got {len(inputs)}")
    if out is None:
        sys.stdout.write(table.to_csv(index=False))
        return
    with _writing(f"--out: cannot write {out}"):
        out.parent.mkdir(parents=True, exist_ok=True)
        table.to_csv(out, index=False)
    err_console.print(f"{len(table)} rows: {out}", highlight=False)


def _predicted_rows(model: LoadedModel, inputs: Path, values: dict[str, str] | None) -> pd.DataFrame:
    """The prediction (or intervention) table of every row of one input file, with progress for a long one."""
    from fedmosaic.models.apply import CHUNK_ROWS, prediction_table
    from fedmosaic.models.inputs import read_inputs

    rows = read_inputs(inputs)
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=err_console,
        disable=len(rows) <= CHUNK_ROWS,
    ) as progress:
        task = progress.add_task("rows", total=len(rows))
        return prediction_table(model, rows, values, advance=lambda done, total: progress.update(task, completed=done))


@contextmanager
def _writing(what: str) -> Iterator[None]:
    """Turn an operating-system error of the block into one line: ``what`` and the system's reason."""
    try:
        yield
    except OSError as error:
        raise FedmosaicError(f"{what}: {error.strerror or error}") from None


def _check_table_out(out: Path, inputs: Path, model_folder: Path) -> None:
    """Refuse an ``--out`` that would overwrite the input file or write into the model folder."""
    target = out.resolve()
    if target == inputs.resolve():
        raise ConfigError("--out", f"{out} is the input file; write the predictions to another file")
    if target.is_relative_to(model_folder.resolve()):
        raise ConfigError("--out", f"{out} is inside the model folder {model_folder}; write the predictions elsewhere")


@app.command()
def examples(
    dest: Annotated[Path, typer.Argument(help="Folder to copy the examples into (created).")] = Path("."),
) -> None:
    """Copy the examples: three hospitals' tables on asia, a vertical task's parties, three sites' images with your own CNN, and three cameras' views."""
    from fedmosaic.examples import copy_examples

    for folder in copy_examples(dest):
        out_console.print(f"{folder}/", highlight=False)


@app.command()
def presets() -> None:
    """List the shipped experiments, and the registered methods, models and datasets with the package of each."""
    from fedmosaic.experiments.datasets import DATASETS
    from fedmosaic.experiments.presets import describe_presets
    from fedmosaic.methods.architectures import MODELS
    from fedmosaic.methods.registry import METHODS

    table = Table("preset", "description", box=None)
    for name, description in describe_presets():
        table.add_row(name, description)
    out_console.print(table)
    for registry in (METHODS, MODELS, DATASETS):
        listing = Table(registry.kind, "package", "summary", box=None)
        for name, component in registry.items():
            listing.add_row(name, registry.package(name), component.summary)
        out_console.print(listing)


@app.command()
def report(
    directory: Annotated[Path, typer.Argument(help="The output folder of a run.")],
) -> None:
    """Write report.md and report.html again from a run's results.json."""
    from fedmosaic.report import load_results, write_report

    results = load_results(directory)
    with _writing(f"cannot write the report in {directory}"):
        markdown, html = write_report(results, directory)
    out_console.print(f"report: {markdown}\nreport: {html}")


SUMMARY_WIDTH = 100
"""Columns the end-of-run table may use when the output is not a terminal (a terminal's own width otherwise)."""


def _print_summary(results: dict[str, Any]) -> None:
    """Print the report's headline table (the metrics of the task's kind with human headers, in their units) and its warnings."""
    from fedmosaic.report.content import headline_table
    from fedmosaic.report.headline import headline_metrics, task_kind
    from fedmosaic.report.oscillation_note import oscillation_notes

    if "grid" in results:
        _print_grid(results)
    else:
        headline = headline_table(results["runs"], headline_metrics(results, task_kind(results)))
        table = Table(title=results["experiment"], caption="± one standard deviation over clients, where reported")
        table.add_column(headline.header[0], no_wrap=True)
        for header in headline.header[1:]:
            table.add_column(header, justify="right")
        for row in headline.rows:
            table.add_row(*row)
        _wide_console().print(table)
    for note in oscillation_notes(results):
        err_console.print(f"warning: {note}", markup=False, highlight=False, soft_wrap=True)


def _wide_console() -> Console:
    """The output console, :data:`SUMMARY_WIDTH` columns wide when it is not a terminal."""
    return out_console if out_console.is_terminal else Console(width=SUMMARY_WIDTH)


def _print_grid(results: dict[str, Any]) -> None:
    table = Table(*results["table"]["header"], title=f"{results['experiment']}: {results['table']['metric']} (%)")
    for row in results["table"]["rows"]:
        table.add_row(*row)
    _wide_console().print(table)


def main() -> None:
    """Entry point: user errors, and files that cannot be read or written, become one line on stderr and exit code 2."""
    try:
        app()
    except FedmosaicError as error:
        err_console.print(f"error: {error}", markup=False, highlight=False, soft_wrap=True)
        sys.exit(2)
    except OSError as error:  # a file the user named cannot be written or read: a folder that is read-only, full...
        where = f"{error.filename}: " if error.filename else ""
        err_console.print(f"error: {where}{error.strerror or error}", markup=False, highlight=False, soft_wrap=True)
        sys.exit(2)
    except KeyboardInterrupt:
        err_console.print("interrupted; continue with --resume", highlight=False)
        sys.exit(130)
