"""Specification of :mod:`fedmosaic.report.plots`."""

import copy
import io
from collections.abc import Callable
from typing import Any

import matplotlib
import matplotlib.image
import pytest

from fedmosaic.errors import FedmosaicError
from fedmosaic.report import concept_plots, plots

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

PLOTS: dict[str, Callable[[dict[str, Any]], bytes]] = {
    "metric_curves": lambda results: plots.metric_curves(results, "accuracy"),
    "final_bars": lambda results: plots.final_bars(results, "accuracy"),
    "bytes_per_round": plots.bytes_per_round,
}


def _without_std(results: dict[str, Any]) -> dict[str, Any]:
    """Return a copy of ``results`` with no ``_std`` key, in final or per-round metrics."""
    stripped = copy.deepcopy(results)
    for run in stripped["runs"]:
        for metrics in [run["final"], *(entry["metrics"] for entry in run["history"])]:
            for key in [key for key in metrics if key.endswith("_std")]:
                del metrics[key]
    return stripped


@pytest.mark.parametrize("plot", PLOTS.values(), ids=PLOTS.keys())
def test_plots_are_png_images_of_fixed_size(plot: Callable[[dict[str, Any]], bytes], results: dict[str, Any]) -> None:
    # Execute
    png = plot(results)

    # Assert
    assert png.startswith(PNG_SIGNATURE)
    height, width, _ = matplotlib.image.imread(io.BytesIO(png)).shape
    assert (width, height) == (plots.FIGSIZE[0] * plots.DPI, plots.FIGSIZE[1] * plots.DPI)


@pytest.mark.parametrize("plot", PLOTS.values(), ids=PLOTS.keys())
def test_plots_are_byte_for_byte_reproducible_whatever_the_callers_style(
    plot: Callable[[dict[str, Any]], bytes], results: dict[str, Any]
) -> None:
    # Execute
    first = plot(results)
    second = plot(results)
    with matplotlib.rc_context({"lines.linewidth": 6.0, "axes.facecolor": "black", "figure.dpi": 30}):
        restyled = plot(results)

    # Assert
    assert first == second == restyled


def test_curves_shade_the_std_band_of_rounds_that_report_one(results: dict[str, Any]) -> None:
    # Execute
    with_band = plots.metric_curves(results, "accuracy")
    without_band = plots.metric_curves(_without_std(results), "accuracy")

    # Assert
    assert with_band != without_band


def test_curves_depend_on_the_metric(results: dict[str, Any]) -> None:
    assert plots.metric_curves(results, "accuracy") != plots.metric_curves(results, "loss")


def test_bars_show_error_bars_for_runs_that_report_a_std(results: dict[str, Any]) -> None:
    # Execute
    with_error_bars = plots.final_bars(results, "accuracy")
    without_error_bars = plots.final_bars(_without_std(results), "accuracy")

    # Assert
    assert with_error_bars != without_error_bars


@pytest.mark.parametrize("plot", [plots.metric_curves, plots.final_bars], ids=["metric_curves", "final_bars"])
def test_a_metric_no_run_reports_is_an_error(
    plot: Callable[[dict[str, Any], str], bytes], results: dict[str, Any]
) -> None:
    with pytest.raises(FedmosaicError, match="'coverage'"):
        plot(results, "coverage")


def test_traffic_of_runs_without_rounds_is_an_error(results: dict[str, Any]) -> None:
    # Prepare
    no_rounds = copy.deepcopy(results)
    for run in no_rounds["runs"]:
        run["history"] = []

    # Execute / Assert
    with pytest.raises(FedmosaicError, match="no run has any round"):
        plots.bytes_per_round(no_rounds)


def test_small_multiples_draw_every_metric_in_one_figure_that_grows_by_rows(results: dict[str, Any]) -> None:
    # Execute
    one_row = plots.small_multiples(results, ["accuracy", "loss"], {"accuracy": "A", "loss": "L"})
    percent = plots.small_multiples(
        results, ["accuracy", "loss"], {"accuracy": "A", "loss": "L"}, frozenset({"accuracy"})
    )
    two_rows = plots.small_multiples(results, ["accuracy", "loss"] * 2, {})

    # Assert
    heights = [matplotlib.image.imread(io.BytesIO(png)).shape[0] for png in (one_row, two_rows)]
    assert heights[0] < heights[1]
    assert one_row != percent


def test_small_multiples_of_a_metric_no_round_reports_is_an_error(results: dict[str, Any]) -> None:
    with pytest.raises(FedmosaicError, match="coverage"):
        plots.small_multiples(results, ["coverage"], {})


def test_accuracy_by_parties_reads_the_keep_metrics(results: dict[str, Any]) -> None:
    # Prepare
    vertical = copy.deepcopy(results)
    vertical["runs"][0]["final"].update(accuracy_keep4=0.9, accuracy_keep1=0.5, accuracy_mcar5=0.7)

    # Execute
    found = plots.parties_by_run(vertical)

    # Assert
    assert found == {"FedAvg": {1: 0.5, 4: 0.9}}
    assert plots.by_parties(vertical).startswith(PNG_SIGNATURE)
    with pytest.raises(FedmosaicError, match="accuracy_keep"):
        plots.by_parties(results)


def test_intervention_curves_draw_the_bayes_ceiling_and_clean_inputs_when_known(
    concept_results: dict[str, Any],
) -> None:
    # Prepare
    bare = copy.deepcopy(concept_results)
    run = bare["runs"][0]
    del run["final"]["bayes_optimal_accuracy"], run["artifacts"]["topological_clean"], run["artifacts"]["random_clean"]

    # Execute / Assert
    assert plots.intervention_curves(concept_results) != plots.intervention_curves(bare)
    with pytest.raises(FedmosaicError, match="no run has intervention curves"):
        plots.intervention_curves(results_without_artifacts(concept_results))


def results_without_artifacts(results: dict[str, Any]) -> dict[str, Any]:
    stripped = copy.deepcopy(results)
    for run in stripped["runs"]:
        run.pop("artifacts", None)
    return stripped


def test_the_graph_figure_depends_on_the_marks(concept_results: dict[str, Any]) -> None:
    # Prepare
    graph = concept_results["runs"][0]["artifacts"]["graph"]
    edges = [(p, c) for c, ps in graph["parents"].items() for p in ps]

    # Execute
    unknown = concept_plots.fused_graph(graph["parents"], dict.fromkeys(edges, "unknown"), "dysp")
    correct = concept_plots.fused_graph(graph["parents"], dict.fromkeys(edges, "correct"), "dysp")
    scored = concept_plots.fused_graph(graph["parents"], dict.fromkeys(edges, "correct"), "dysp", {edges[0]: 0.5})

    # Assert
    assert unknown.startswith(PNG_SIGNATURE)
    assert len({unknown, correct, scored}) == 3


def test_the_client_matrix_has_a_row_per_client(concept_results: dict[str, Any]) -> None:
    # Prepare
    artifacts = concept_results["runs"][0]["artifacts"]
    many = {str(c): {"concepts": ["smoke"], "joined": 1 + c % 2} for c in range(30)}

    # Execute
    two = concept_plots.client_concepts(artifacts["registry"], artifacts["graph"]["nodes"])
    thirty = concept_plots.client_concepts(many, artifacts["graph"]["nodes"])

    # Assert
    heights = [matplotlib.image.imread(io.BytesIO(png)).shape[0] for png in (two, thirty)]
    assert heights[0] < heights[1]
