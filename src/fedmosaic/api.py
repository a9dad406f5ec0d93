"""One call from Python: :func:`run` an experiment and get its comparison, histories and models back.

``fedmosaic.run`` writes exactly what ``fedmosaic run`` writes (``results.json``,
``summary.json``, the report and the models) and returns a :class:`Results`
that reads them as pandas DataFrames.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fedmosaic.errors import ConfigError
from fedmosaic.experiments.config import ExperimentConfig, load_config
from fedmosaic.experiments.model_cards import model_path, slug
from fedmosaic.experiments.outputs import SUMMARY
from fedmosaic.experiments.overrides import set_path
from fedmosaic.experiments.presets import experiment_folder, resolve_experiment, resolve_model_code
from fedmosaic.experiments.progress import ProgressSink, SilentProgress
from fedmosaic.experiments.runner import run_experiment
from fedmosaic.federation import RoundRecord

if TYPE_CHECKING:
    import pandas as pd

    from fedmosaic.models.loaded import LoadedModel

Experiment = str | Path | Mapping[str, Any] | ExperimentConfig
"""A preset name, a TOML file, a raw configuration (nested dicts) or a validated configuration."""


@dataclass(frozen=True)
class Results:
    """A finished experiment, read from its output folder.

    Parameters
    ----------
    out : Path
        The output folder (what ``fedmosaic run --out`` names).
    raw : dict
        ``results.json`` as a dict.
    """

    out: Path
    raw: dict[str, Any]

    @property
    def comparison(self) -> pd.DataFrame:
        """One row per run (per grid point and run, for a grid): ``summary.json``'s rows, final metrics and totals."""
        import pandas as pd

        return pd.DataFrame(json.loads((self.out / SUMMARY).read_text())["rows"])

    @property
    def runs(self) -> list[str]:
        """The runs' names (of a grid's first point, for a grid)."""
        return [run["name"] for run in self._runs(None)]

    def history(self, run: str, *, point: int | None = None) -> pd.DataFrame:
        """Run ``run``'s round records, one row per round, its metrics as columns.

        Parameters
        ----------
        run : str
            A run's name (:attr:`runs`).
        point : int or None, default None
            For a grid, the index of the point (in ``results.json``'s ``points``).

        Raises
        ------
        ConfigError
            If no run has that name (naming the ones there are).
        """
        import pandas as pd

        found = self._run(run, point)
        rows = [
            {key: value for key, value in record.items() if key != "metrics"} | record.get("metrics", {})
            for record in found["history"]
        ]
        return pd.DataFrame(rows)

    def model(self, run: str, *, point: int | None = None, trust_code: bool = False) -> LoadedModel:
        """The model run ``run`` wrote (``fedmosaic.load_model`` on its folder; ``trust_code`` as there).

        Raises
        ------
        ModelFileError
            If the run wrote several models (a local run's, one per client: load one
            of its folders with ``fedmosaic.load_model``) or none.
        """
        from fedmosaic.models.loader import load_model

        self._run(run, point)
        index = self.runs.index(run)
        return load_model(model_path(self._folder(point), index, slug(run), None), trust_code=trust_code)

    def _folder(self, point: int | None) -> Path:
        return self.out if point is None else self.out / self.raw["points"][point]["folder"]

    def _runs(self, point: int | None) -> list[dict[str, Any]]:
        if "points" not in self.raw:
            return list(self.raw["runs"])
        chosen = self._folder(0 if point is None else point)
        return list(json.loads((chosen / "results.json").read_text())["runs"])

    def _run(self, run: str, point: int | None) -> dict[str, Any]:
        runs = self._runs(point)
        for found in runs:
            if found["name"] == run:
                return found
        raise ConfigError("run", f"no run named '{run}' (runs: {', '.join(r['name'] for r in runs)})")


def run(
    experiment: Experiment,
    *,
    out: str | Path | None = None,
    seed: int | None = None,
    overrides: Mapping[str, Any] | None = None,
    data_dir: str | Path | None = None,
    resume: bool = False,
    overwrite: bool = False,
    jobs: int = 1,
    progress: bool = True,
) -> Results:
    """Run an experiment as ``fedmosaic run`` does, and return its results.

    Parameters
    ----------
    experiment : str, Path, mapping or ExperimentConfig
        A preset name (``fedmosaic presets``), a TOML file, a raw
        configuration or a validated :class:`~fedmosaic.experiments.config.ExperimentConfig`.
    out : str or Path or None, default None
        Output folder [default: ``runs/<name>``].
    seed : int or None, default None
        The experiment's seed (overrides the configuration's).
    overrides : mapping of str to value, default None
        Dotted keys and their values, as ``--set`` takes them:
        ``{"federation.rounds": 5, "runs.*.params.mu": 0.1}``.
    data_dir : str or Path or None, default None
        Data folder [default: ``$FEDMOSAIC_DATA``, then the cache folder].
    resume, overwrite : bool, default False
        As ``--resume`` and ``--overwrite``.
    jobs : int, default 1
        Independent runs (grid points, compared runs) in this many processes.
    progress : bool, default True
        Show a progress bar per run (in a notebook, a widget where ipywidgets is installed).

    Returns
    -------
    Results
        The comparison, each run's history, and its model.

    Raises
    ------
    ConfigError
        Naming the offending field, before anything is written.

    Examples
    --------
    >>> import tempfile
    >>> results = run("digits-fedavg", out=tempfile.mkdtemp(), progress=False,
    ...               overrides={"federation.rounds": 2, "runs": [{"name": "FedAvg", "method": "fedavg"}]})
    >>> list(results.comparison["name"]), list(results.history("FedAvg")["round"])
    (['FedAvg'], [1, 2])
    """
    config = _config(experiment, seed, overrides or {})
    out_dir = Path(out) if out is not None else Path("runs") / config.name
    sink: ProgressSink = _Bars() if progress else SilentProgress()
    try:
        raw = run_experiment(
            config, out_dir, data_dir=data_dir, resume=resume, overwrite=overwrite, progress=sink, jobs=jobs
        )
    except ConfigError as error:
        if error.field not in ("--out", "--resume"):
            raise
        words = error.message.replace("--resume", "resume=True").replace("--overwrite", "overwrite=True")
        raise ConfigError(error.field.removeprefix("--"), words.replace("--out", "out")) from None
    finally:
        if isinstance(sink, _Bars):
            sink.close()
    return Results(out_dir, raw)


def _config(experiment: Experiment, seed: int | None, overrides: Mapping[str, Any]) -> ExperimentConfig:
    """The validated configuration of ``experiment`` with ``seed`` and ``overrides`` applied."""
    folder = Path.cwd()
    if isinstance(experiment, ExperimentConfig):
        source: dict[str, Any] = experiment.document()
    elif isinstance(experiment, Mapping):
        source = copy.deepcopy(dict(experiment))
    else:
        source, folder = resolve_experiment(str(experiment)), experiment_folder(str(experiment))
    for key, value in {**overrides, **({"seed": seed} if seed is not None else {})}.items():
        if not key:
            raise ConfigError("overrides", "keys are dotted paths such as 'federation.rounds', got ''")
        set_path(source, key.split("."), copy.deepcopy(value), key)
    return load_config(resolve_model_code(source, folder))


class _Bars:
    """One tqdm bar per run (``tqdm.auto``: a widget in a notebook, text in a terminal)."""

    def __init__(self) -> None:
        self._bars: dict[str, Any] = {}

    def start_point(self, index: int, total: int, label: str) -> None:
        """Print which grid point starts."""
        from tqdm.auto import tqdm  # type: ignore[import-untyped]

        tqdm.write(f"grid point {index + 1}/{total}: {label}")

    def start_run(self, name: str, total_rounds: int) -> None:
        """Open the run's bar."""
        from tqdm.auto import tqdm

        self._bars[name] = tqdm(total=total_rounds, desc=name, unit="round", leave=True)

    def advance(self, name: str, record: RoundRecord) -> None:
        """Advance the run's bar and show its latest accuracy and loss."""
        bar = self._bars.get(name)
        if bar is None:
            return
        shown = {k: f"{v:.4f}" for k, v in record.metrics.items() if k in ("accuracy", "loss")}
        bar.set_postfix(shown, refresh=False)
        bar.update(1)

    def finish_run(self, name: str) -> None:
        """Close the run's bar."""
        bar = self._bars.pop(name, None)
        if bar is not None:
            bar.close()

    def close(self) -> None:
        """Close the bars still open (a run that failed)."""
        for name in list(self._bars):
            self.finish_run(name)
