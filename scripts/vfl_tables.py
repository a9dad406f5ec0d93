"""Print the FALSE-VFL results pages' tables from the committed grid files.

Reads every ``docs/results/vfl-part-*.json`` (the ``results.json`` of a part
of the ``vfl-grid`` preset), groups the runs by dataset, protocol, training
setting and run name (one entry per seed), and prints named blocks, each
written between its markers on the pages of ``PAGES``: the verdict table
(the paper's three claims per dataset and protocol: best in most cells, mean
lead, lead growing with missingness), which seeds ran, then one section per
dataset and protocol (the tally with its verdicts, the accuracy table,
FALSE-VFL's prediction rules: SNIS with 20 and 1000 samples, the posterior
mean, the effective sample size), the sections with labels among all rows,
and, from ``docs/results/vfl-variants-*.json``, the candidate settings of
fedmosaic's FALSE-VFL run side by side, kept out of the tallies.

Under the ``paper`` protocol the contender is "FALSE-VFL (paper)", under
``tuned`` "FALSE-VFL (fedmosaic)"; the other FALSE-VFL row is shown but is
never a baseline.

Usage::

    python scripts/vfl_tables.py            # print every block
    python scripts/vfl_tables.py --write    # replace each on its pages
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

RESULTS = Path(__file__).resolve().parent.parent / "docs" / "results"
PAPER_RUN, OURS = "FALSE-VFL (paper)", "FALSE-VFL (fedmosaic)"
DATASET_NAMES = {"isolet": "ISOLET", "fashion-mnist": "Fashion-MNIST"}
"""How the page names each dataset."""

CONTENDER = {"paper": PAPER_RUN, "tuned": OURS}
REFERENCE = "LASER-VFL (reference configuration)"
BASELINES = ["Local", "Vanilla VFL", "PlugVFL", "LASER-VFL", REFERENCE, "FedHSSL"]
PAPER_BASELINES = [name for name in BASELINES if name != REFERENCE]
"""The paper protocol's baselines; its tally is also given with LASER-VFL (reference configuration) among them."""
TRAINS = ["mcar:0.2", "mcar:0.5", "mar:1", "mar:2", "mnar:0.7", "mnar:0.9"]
TESTS = ["mcar0", "mcar2", "mcar5", "mar1", "mar2", "mnar7", "mnar9"]
FEW = ["keep1", "keep2"]
LABELS = {
    "mcar:0.2": "MCAR 2",
    "mcar:0.5": "MCAR 5",
    "mar:1": "MAR 1",
    "mar:2": "MAR 2",
    "mnar:0.7": "MNAR 7",
    "mnar:0.9": "MNAR 9",
    "mcar0": "MCAR 0",
    "mcar2": "MCAR 2",
    "mcar5": "MCAR 5",
    "mar1": "MAR 1",
    "mar2": "MAR 2",
    "mnar7": "MNAR 7",
    "mnar9": "MNAR 9",
    "keep1": "KEEP 1",
    "keep2": "KEEP 2",
}
PAPER_NUMBERS = {
    "isolet": "paper: FALSE-VFL best in 160 of all 168 cells (four datasets), +15.7 points on ISOLET",
    "fashion-mnist": "paper: +4.5 points on Fashion-MNIST",
}
SEEDS = (0, 1, 2)
"""The seeds of the grid's every point."""
DATASET_ORDER = {"isolet": 0, "fashion-mnist": 1}
"""The order of the datasets on the page."""
Key = tuple[str, str, str, str]
Runs = dict[Key, list[dict[str, Any]]]


class Point(NamedTuple):
    """What names a grid point: dataset, baseline protocol, training setting, seed."""

    dataset: str
    protocol: str
    train: str
    seed: int


def _points(folder: Path, labels: str) -> Iterator[tuple[Point, dict[str, Any]]]:
    """Every grid point of the committed parts with labels drawn among ``labels`` rows, keyed, with its runs."""
    for path in sorted(folder.glob("vfl-part-*.json")):
        results = json.loads(path.read_text(encoding="utf-8"))
        config = results["config"]
        for point in results["points"]:
            if point_value(point, config, "vertical.label_rows", "active") != labels:
                continue
            key = Point(
                point_value(point, config, "data.dataset"),
                point_value(point, config, "vertical.protocol", "tuned"),
                point_value(point, config, "vertical.train_missing"),
                point_value(point, config, "seed", 0),
            )
            yield key, point


def load_runs(folder: Path = RESULTS, labels: str = "active") -> Runs:
    """Every run of the committed parts with labels drawn among ``labels`` rows ("active" or "all").

    Keyed by (dataset, protocol, training setting, run name); one entry per seed.
    """
    runs: Runs = defaultdict(list)
    for key, point in _points(folder, labels):
        for run in point["runs"]:
            runs[(key.dataset, key.protocol, key.train, run["name"])].append(run)
    return runs


def coverage(folder: Path = RESULTS) -> str:
    """Which seeds ran, per dataset, protocol and training setting (default label placement), and how many points remain."""
    seeds: dict[tuple[str, str, str], set[int]] = defaultdict(set)
    for key, _ in _points(folder, "active"):
        seeds[(key.dataset, key.protocol, key.train)].add(key.seed)
    groups = sorted({(dataset, protocol) for dataset, protocol, _ in seeds}, key=_page_order)
    lines = [
        "| dataset | protocol | " + " | ".join(LABELS[train] for train in TRAINS) + " |",
        "|---|---|" + "---|" * len(TRAINS),
    ]
    for dataset, protocol in groups:
        cells = [", ".join(str(s) for s in sorted(seeds[(dataset, protocol, train)])) or "—" for train in TRAINS]
        lines.append(f"| {DATASET_NAMES.get(dataset, dataset)} | {protocol} | " + " | ".join(cells) + " |")
    expected = len(groups) * len(TRAINS) * len(SEEDS)
    ran = sum(len(seeds[(d, p, t)] & set(SEEDS)) for d, p in groups for t in TRAINS)
    summary = (
        f"**{ran} of {expected}** points run ({len(TRAINS)} training settings x {len(SEEDS)} seeds"
        f" per dataset and protocol); **{expected - ran} not run** (—: no seed yet)."
    )
    return "\n".join([summary, "", *lines])


def point_value(point: dict[str, Any], config: dict[str, Any], key: str, default: Any = None) -> Any:
    """The dotted ``key`` of a grid point: its grid value, else the grid's configuration, else ``default``."""
    if key in point["values"]:
        return point["values"][key]
    section, _, name = key.rpartition(".")
    return (config.get(section, {}) if section else config).get(name, default)


def mean(cell: list[dict[str, Any]], metric: str) -> float | None:
    """The seed-mean of ``metric`` in percent (None when no run has it)."""
    values = [run[metric] for run in cell if run.get(metric) is not None]
    return 100 * float(np.mean(values)) if values else None


def _page_order(group: tuple[str, str]) -> tuple[int, bool]:
    """Where a (dataset, protocol) goes on the page: datasets in their order, the paper protocol first."""
    dataset, protocol = group
    return DATASET_ORDER.get(dataset, len(DATASET_ORDER)), protocol != "paper"


def _groups(runs: Runs) -> list[tuple[str, str]]:
    return sorted({(dataset, protocol) for dataset, protocol, _, _ in runs}, key=_page_order)


def _names(runs: Runs, dataset: str, protocol: str) -> list[str]:
    present = {name for d, p, _, name in runs if (d, p) == (dataset, protocol)}
    return [name for name in [PAPER_RUN, OURS, *BASELINES] if name in present]


def _trains(runs: Runs, dataset: str, protocol: str) -> list[str]:
    present = {train for d, p, train, _ in runs if (d, p) == (dataset, protocol)}
    return [train for train in TRAINS if train in present]


def accuracy_table(runs: Runs, dataset: str, protocol: str) -> str:
    """Test accuracy (percent, seed-mean) per training setting and run; the best of the contender and the baselines in bold."""
    columns = TESTS + FEW
    lines = [
        "| train | run | " + " | ".join(LABELS[c] for c in columns) + " | seeds |",
        "|---|---|" + "---|" * (len(columns) + 1),
    ]
    contenders = [CONTENDER[protocol], *BASELINES]
    for train in _trains(runs, dataset, protocol):
        best = {
            c: max(
                (
                    v
                    for name in contenders
                    if (v := mean(runs.get((dataset, protocol, train, name), []), f"accuracy_{c}")) is not None
                ),
                default=None,
            )
            for c in columns
        }
        for name in _names(runs, dataset, protocol):
            cell = runs.get((dataset, protocol, train, name), [])
            shown = []
            for c in columns:
                value = mean(cell, f"accuracy_{c}")
                text = "n/a" if value is None else f"{value:.1f}"
                bold = (
                    value is not None
                    and name in contenders
                    and best[c] is not None
                    and round(value, 1) == round(best[c], 1)
                )
                shown.append(f"**{text}**" if bold else text)
            lines.append(f"| {LABELS[train]} | {name} | " + " | ".join(shown) + f" | {len(cell)} |")
    return "\n".join(lines)


def margins(
    runs: Runs, dataset: str, protocol: str, tests: list[str], baselines: list[str] = BASELINES
) -> list[tuple[str, str, float]]:
    """(training setting, test setting, contender minus the best of ``baselines`` in points) for every cell both ran."""
    out = []
    for train in _trains(runs, dataset, protocol):
        contender = runs.get((dataset, protocol, train, CONTENDER[protocol]), [])
        for test in tests:
            mine = mean(contender, f"accuracy_{test}")
            others = [
                v
                for name in baselines
                if (v := mean(runs.get((dataset, protocol, train, name), []), f"accuracy_{test}")) is not None
            ]
            if mine is not None and others:
                out.append((train, test, mine - max(others)))
    return out


def tally(runs: Runs, dataset: str, protocol: str) -> str:
    """The contender against the best baseline, and under the paper protocol also with the reference configuration among them."""
    if protocol == "tuned":
        return _tally(runs, dataset, protocol, BASELINES, "the best baseline")
    return "\n\n".join(
        [
            _tally(runs, dataset, protocol, PAPER_BASELINES, "the best paper-protocol baseline"),
            f"**With {REFERENCE} among the baselines:**",
            _tally(runs, dataset, protocol, BASELINES, "the best baseline"),
        ]
    )


class Claims(NamedTuple):
    """The paper's three claims, as measured on one dataset and protocol against one set of baselines."""

    won: int
    cells: int
    lead: float
    by_test: dict[str, float]
    few: list[tuple[str, str, float]]
    seeds_run: list[int]


def claims(runs: Runs, dataset: str, protocol: str, baselines: list[str]) -> Claims | None:
    """Cells won, mean lead and lead by test setting of the protocol's FALSE-VFL over the best of ``baselines``."""
    cells = margins(runs, dataset, protocol, TESTS, baselines)
    if not cells:
        return None
    by_test = {
        t: float(np.mean([m for _, test, m in cells if test == t])) for t in TESTS if any(x[1] == t for x in cells)
    }
    seeds_run = [
        len(runs.get((dataset, protocol, train, CONTENDER[protocol]), [])) for train in _trains(runs, dataset, protocol)
    ]
    return Claims(
        won=sum(m > 0 for _, _, m in cells),
        cells=len(cells),
        lead=float(np.mean([m for _, _, m in cells])),
        by_test=by_test,
        few=margins(runs, dataset, protocol, FEW, baselines),
        seeds_run=seeds_run,
    )


PAPER_SHARE = 160 / 168
"""The paper's share of cells won (over its four datasets)."""
PAPER_LEAD = {"isolet": 15.7, "fashion-mnist": 4.5}
"""The paper's mean lead over the strongest baseline, per dataset, in points."""
PAPER_GROWTH = {"mcar0": 1.8, "mcar5": 9.6, "mar2": 12.3}
"""The paper's lead by test setting (over its four datasets), in points."""
GROWTH = ("mcar0", "mcar5", "mar2")
VERDICT_RULES = (
    "Verdicts: **best in most cells** is reproduced at 85% of the cells or more (the paper: 95%), partly "
    "from 50%; **mean lead** is reproduced within 2 points of the paper's or above it, partly when smaller "
    "but positive; **lead grows** is reproduced when the lead grows from MCAR 0 to MCAR 5 to MAR 2, partly "
    "when it grows only to MCAR 5. Every number is the mean of the seeds run (3 per training setting)."
)


def share_verdict(claim: Claims) -> str:
    """Reproduced, partly or not: the share of cells won."""
    share = claim.won / claim.cells
    return "reproduced" if share >= 0.85 else "partly" if share >= 0.5 else "not reproduced"


def lead_verdict(claim: Claims, dataset: str) -> str:
    """Reproduced, partly or not: the mean lead against the paper's on the dataset."""
    paper = PAPER_LEAD.get(dataset)
    if paper is None:
        return "no paper number"
    return "reproduced" if claim.lead >= paper - 2 else "partly" if claim.lead > 0 else "not reproduced"


def growth_verdict(claim: Claims) -> str:
    """Reproduced, partly or not: the lead growing from MCAR 0 to MCAR 5 to MAR 2."""
    if not all(t in claim.by_test for t in GROWTH):
        return "not run"
    first, then, last = (claim.by_test[t] for t in GROWTH)
    return "reproduced" if first < then < last else "partly" if first < then else "not reproduced"


def _growth(claim: Claims) -> str:
    return " → ".join(f"{claim.by_test[t]:+.1f}" for t in GROWTH if t in claim.by_test)


def verdict_table(runs: Runs | None = None) -> str:
    """One row per dataset, protocol and set of baselines: the paper's three claims, our numbers, the verdicts."""
    runs = load_runs() if runs is None else runs
    paper_growth = " → ".join(f"{PAPER_GROWTH[t]:+.1f}" for t in GROWTH)
    lines = [
        f"| dataset | contender | against | best in most cells (paper {100 * PAPER_SHARE:.0f}%) | "
        f"mean lead, points (paper: ISOLET +15.7, Fashion-MNIST +4.5) | "
        f"lead MCAR 0 → MCAR 5 → MAR 2 (paper {paper_growth}) |",
        "|---|---|---|---|---|---|",
    ]
    for dataset, protocol in _groups(runs):
        against = [(PAPER_BASELINES, "paper-protocol baselines")] if protocol == "paper" else []
        against.append((BASELINES, "every baseline" if protocol == "tuned" else f"with {REFERENCE}"))
        for baselines, name in against:
            claim = claims(runs, dataset, protocol, baselines)
            if claim is None:
                continue
            lines.append(
                f"| {DATASET_NAMES.get(dataset, dataset)} | {CONTENDER[protocol]} | {name} | "
                f"{claim.won} of {claim.cells} ({100 * claim.won / claim.cells:.0f}%): **{share_verdict(claim)}** | "
                f"{claim.lead:+.1f}: **{lead_verdict(claim, dataset)}** | "
                f"{_growth(claim)}: **{growth_verdict(claim)}** |"
            )
    return "\n".join(lines)


def _tally(runs: Runs, dataset: str, protocol: str, baselines: list[str], against: str) -> str:
    """Cells won against ``baselines``, mean margin, margin by test setting, the KEEP cells and the claims' verdicts."""
    claim = claims(runs, dataset, protocol, baselines)
    if claim is None:
        return "(no cell ran)"
    lines = [
        f"{CONTENDER[protocol]} is best in **{claim.won} of {claim.cells}** cells "
        f"({100 * claim.won / claim.cells:.0f}%), mean margin over {against} **{claim.lead:+.1f}** points "
        f"({PAPER_NUMBERS.get(dataset, 'paper: no number')}).",
        "",
        "Margin by test setting (mean over the training settings): "
        + ", ".join(f"{LABELS[t]} {v:+.1f}" for t, v in claim.by_test.items())
        + " (paper, over all datasets: MCAR 0 +1.8, MCAR 5 +9.6, MAR 2 +12.3).",
    ]
    if claim.few:
        few_won = sum(m > 0 for _, _, m in claim.few)
        lines += [
            "",
            f"Rows with one or two parties present (KEEP 1, KEEP 2): best in {few_won} of {len(claim.few)} cells, "
            f"margins {', '.join(f'{LABELS[tr]}/{LABELS[t]} {m:+.1f}' for tr, t, m in claim.few)}.",
        ]
    lines += [
        "",
        f"**Best in most cells: {share_verdict(claim)}; mean lead: {lead_verdict(claim, dataset)}; "
        f"lead growing from MCAR 0 to MCAR 5 to MAR 2: {growth_verdict(claim)}.**" + _seed_caveat(claim.seeds_run),
    ]
    return "\n".join(lines)


def _seed_caveat(seeds_run: list[int]) -> str:
    """What a verdict rests on when some training settings have fewer seeds than the grid names (empty otherwise)."""
    complete = sum(n >= len(SEEDS) for n in seeds_run)
    if complete == len(seeds_run):
        return ""
    fewer = sorted({n for n in seeds_run if n < len(SEEDS)})
    counts = f"{fewer[0]} to {fewer[-1]}" if len(fewer) > 1 else f"{fewer[0]}"
    return (
        f" The verdict is on the seeds run: {complete} of the {len(seeds_run)} training settings run have all "
        f"{len(SEEDS)} seeds, the others {counts}."
    )


def diagnostics(runs: Runs, dataset: str, protocol: str) -> str:
    """FALSE-VFL's prediction rules per test setting: SNIS (20), SNIS (1000), posterior mean, and the mean ESS of 20 samples."""
    columns = TESTS + FEW
    lines = [
        "| train | run | rule | " + " | ".join(LABELS[c] for c in columns) + " |",
        "|---|---|---|" + "---|" * len(columns),
    ]
    rules = [("SNIS 20", "snis_accuracy"), ("SNIS 1000", "snis1000_accuracy"), ("posterior mean", "mean_accuracy")]
    for train in _trains(runs, dataset, protocol):
        for name in (PAPER_RUN, OURS):
            cell = runs.get((dataset, protocol, train, name), [])
            if not cell:
                continue
            for label, metric in rules:
                values = [mean(cell, f"{metric}_{c}") for c in columns]
                if all(v is None for v in values):
                    continue
                shown = ["n/a" if v is None else f"{v:.1f}" for v in values]
                lines.append(f"| {LABELS[train]} | {name} | {label} | " + " | ".join(shown) + " |")
            ess = [[run.get(f"snis_ess_{c}") for run in cell] for c in columns]
            shown = ["n/a" if any(v is None for v in e) else f"{np.mean(e):.2f}" for e in ess]
            lines.append(f"| {LABELS[train]} | {name} | ESS (of 20) | " + " | ".join(shown) + " |")
    return "\n".join(lines)


def load_variants(folder: Path = RESULTS) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(point values, run) of every run in the committed variant grids ``vfl-variants-*.json``.

    Those grids compare candidate settings of fedmosaic's FALSE-VFL side by
    side; they are kept apart from the tallies (a variant is not a baseline,
    and its grid repeats the chosen run).
    """
    found = []
    for path in sorted(folder.glob("vfl-variants-*.json")):
        results = json.loads(path.read_text(encoding="utf-8"))
        config = results["config"]
        for point in results["points"]:
            values = {
                "dataset": point_value(point, config, "data.dataset"),
                "train": point_value(point, config, "vertical.train_missing"),
                "seed": point_value(point, config, "seed"),
            }
            found += [(values, run) for run in point["runs"]]
    return found


def variants_table(variants: list[tuple[dict[str, Any], dict[str, Any]]]) -> str:
    """Validation and test accuracy (percent) of each variant run, per dataset, training setting and seed."""
    columns = TESTS + FEW
    lines = [
        "| dataset | train | seed | run | validation | " + " | ".join(LABELS[c] for c in columns) + " |",
        "|---|---|---|---|---|" + "---|" * len(columns),
    ]
    for values, run in variants:
        shown = [f"{100 * run[f'accuracy_{c}']:.1f}" if f"accuracy_{c}" in run else "n/a" for c in columns]
        validation = run.get("validation_accuracy")
        lines.append(
            f"| {DATASET_NAMES.get(values['dataset'], values['dataset'])} | {LABELS[values['train']]} | "
            f"{values['seed']} | {run['name']} | {'n/a' if validation is None else f'{100 * validation:.0f}'} | "
            + " | ".join(shown)
            + " |"
        )
    return "\n".join(lines)


LABEL_PLACEMENTS = {"active": "", "all": ", labels among all rows"}
"""Where the labels are drawn (``vertical.label_rows``) and how a section's title says it."""


def _section(runs: Runs, dataset: str, protocol: str, suffix: str = "") -> list[str]:
    """Tally, accuracy table and prediction rules of one dataset and protocol."""
    title = f"{DATASET_NAMES.get(dataset, dataset)}, {protocol} protocol{suffix}"
    return [
        f"### {title}",
        "",
        tally(runs, dataset, protocol),
        "",
        f"Test accuracy in percent (seed-mean; bold: the best of {CONTENDER[protocol]} and the baselines):",
        "",
        accuracy_table(runs, dataset, protocol),
        "",
        "FALSE-VFL's prediction rules on the same runs (accuracy in percent; ESS: mean effective sample size of the 20 SNIS weights):",
        "",
        diagnostics(runs, dataset, protocol),
        "",
    ]


def _variants_block() -> list[str]:
    return [
        "Validation accuracy (the 100 held-out labeled rows, best round) and test accuracy, in percent, one run each:",
        "",
        variants_table(load_variants()),
        "",
    ]


def blocks() -> dict[str, str]:
    """Every generated block, by name: the verdicts, the points run, one section per page, the variants."""
    runs, among_all = load_runs(), load_runs(labels="all")
    parts: dict[str, list[str]] = {
        "verdicts": [verdict_table(runs), "", VERDICT_RULES, ""],
        "points": ["Seeds run per training setting (labels among the active party's rows):", "", coverage(), ""],
    }
    for dataset, protocol in _groups(runs):
        parts[f"{dataset}-{protocol}"] = _section(runs, dataset, protocol)
    parts["labels-all"] = [
        line
        for dataset, protocol in _groups(among_all)
        for line in _section(among_all, dataset, protocol, LABEL_PLACEMENTS["all"])
    ]
    parts["variants"] = _variants_block()
    return {name: "\n".join(lines).rstrip() + "\n" for name, lines in parts.items()}


PAGES = {
    "verdicts": ("vfl.md", "README.md"),
    "points": ("vfl.md",),
    "isolet-paper": ("vfl/isolet-paper.md",),
    "isolet-tuned": ("vfl/isolet-tuned.md",),
    "fashion-mnist-paper": ("vfl/fashion-mnist-paper.md",),
    "fashion-mnist-tuned": ("vfl/fashion-mnist-tuned.md",),
    "labels-all": ("vfl/labels-among-all-rows.md",),
    "variants": ("vfl/party-subsets.md",),
}
"""Which pages under ``docs/results`` show each block, between its markers."""


def markers(name: str) -> tuple[str, str]:
    """The begin and end markers of the block ``name`` on a page."""
    return f"<!-- vfl_tables:{name}:begin -->", f"<!-- vfl_tables:{name}:end -->"


def page_block(text: str, name: str) -> str:
    """The generated block ``name`` of a page's text (between its markers)."""
    begin, end = markers(name)
    start, stop = text.index(begin) + len(begin), text.index(end)
    return text[start:stop].strip("\n") + "\n"


def write(text: str, name: str, block: str) -> str:
    """``text`` with the block ``name`` replaced by ``block``."""
    begin, end = markers(name)
    start, stop = text.index(begin) + len(begin), text.index(end)
    return text[:start] + "\n" + block + text[stop:]


def main() -> None:
    """Print the blocks, or with ``--write`` replace each on its pages."""
    generated = blocks()
    if "--write" not in sys.argv[1:]:
        for name, block in generated.items():
            print(f"{markers(name)[0]}\n{block}{markers(name)[1]}\n")
        return
    for name, pages in PAGES.items():
        for page in pages:
            path = RESULTS / page
            path.write_text(write(path.read_text(encoding="utf-8"), name, generated[name]), encoding="utf-8")


if __name__ == "__main__":
    main()
