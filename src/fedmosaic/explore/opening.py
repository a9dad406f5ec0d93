"""From a run folder to an :class:`~fedmosaic.explore.session.Explorer`, or a one-line error."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fedmosaic.errors import FedmosaicError
from fedmosaic.explore.session import Explorer
from fedmosaic.models.card import CARD_FILE, read_card
from fedmosaic.models.loaded import ConceptModelFile
from fedmosaic.models.loader import MODEL_DIR, load_model
from fedmosaic.report import load_results
from fedmosaic.report.concept_figures import true_network

FCM_METHOD = "fcm"


def open_run(run_dir: Path, run: str | None = None) -> Explorer:
    """Open the F-CMs model a run exported, with the true network when the data came from one.

    Parameters
    ----------
    run_dir : Path
        The output folder of a run (it holds ``results.json`` and ``model/``).
    run : str, optional
        Which F-CMs run's model, by name; default the first federated one, else the first.

    Returns
    -------
    Explorer

    Raises
    ------
    FedmosaicError
        If the folder is not a run, is a grid, has no F-CMs run, exported no
        model, or has no F-CMs model of that name.
    """
    results = load_results(run_dir)
    if "grid" in results:
        raise FedmosaicError(f"{run_dir}: a grid; explore one of its points (a folder under {run_dir / 'points'})")
    methods = sorted({entry["method"] for entry in results["runs"]})
    if FCM_METHOD not in methods:
        raise FedmosaicError(f"{run_dir}: not an F-CMs run (methods: {', '.join(methods)}); explore needs method fcm")
    root = run_dir / MODEL_DIR
    folders = sorted(card.parent for card in root.glob(f"*/{CARD_FILE}")) if root.is_dir() else []
    cards = {folder: card for folder in folders if (card := read_card(folder))["kind"] == "concepts"}
    if not cards:
        raise FedmosaicError(f"{run_dir}: no F-CMs model in {root} (a run writes one when it ends; run it again)")
    folder = _choose(cards, run, run_dir)
    model = load_model(folder)
    assert isinstance(model, ConceptModelFile)
    return Explorer.open(model, true_network(results["config"]))


def _choose(cards: dict[Path, dict[str, Any]], run: str | None, run_dir: Path) -> Path:
    """The model folder of run ``run``, else of the first federated run, else the first."""
    if run is not None:
        named = [folder for folder, card in cards.items() if card.get("run") == run]
        if not named:
            names = ", ".join(str(card.get("run")) for card in cards.values())
            raise FedmosaicError(f"--run: no F-CMs model of run {run!r} in {run_dir} (models: {names})")
        return named[0]
    federated = [folder for folder, card in cards.items() if card.get("setting") == "federated"]
    return (federated or list(cards))[0]
