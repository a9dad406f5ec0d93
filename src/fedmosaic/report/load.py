"""Read the results of an experiment run."""

import json
from pathlib import Path
from typing import Any

from fedmosaic.errors import FedmosaicError

RESULTS_FILE = "results.json"
"""Name of the file an experiment run writes its results to."""


def load_results(run_dir: Path) -> dict[str, Any]:
    """Read ``results.json`` from an experiment's run folder.

    Parameters
    ----------
    run_dir : Path
        Folder an experiment run wrote its output to.

    Returns
    -------
    dict[str, Any]
        The results, as written by the run.

    Raises
    ------
    FedmosaicError
        If the folder is a file or holds no readable ``results.json``, or it
        is not the JSON object of a run's results; the message is one line.
    """
    path = run_dir / RESULTS_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FedmosaicError(
            f"no {RESULTS_FILE} in {run_dir}: not the output folder of an experiment run, or the run did not finish"
        ) from None
    except NotADirectoryError:
        raise FedmosaicError(f"{run_dir}: a file, not a folder; give the output folder of an experiment run") from None
    except (OSError, UnicodeDecodeError) as error:
        raise FedmosaicError(f"cannot read {path}: {getattr(error, 'strerror', None) or error}") from None
    try:
        results = json.loads(text)
    except ValueError as error:
        raise FedmosaicError(f"malformed {path}: {error}") from None
    if not isinstance(results, dict):
        raise FedmosaicError(f"malformed {path}: expected a JSON object, got {type(results).__name__}")
    lacking = [key for key in ("experiment", "config", "points" if "grid" in results else "runs") if key not in results]
    if lacking:
        raise FedmosaicError(f"malformed {path}: no {lacking[0]!r} (not the results of a fedmosaic run)")
    return results
