"""Reports of experiment runs: tables and figures, as Markdown and as HTML.

Examples
--------
>>> from pathlib import Path
>>> from fedmosaic.report import load_results, write_report
>>> run_dir = Path("runs/fedavg-digits")                      # doctest: +SKIP
>>> write_report(load_results(run_dir), run_dir / "report")   # doctest: +SKIP
"""

from fedmosaic.report.load import load_results
from fedmosaic.report.render import write_report

__all__ = ["load_results", "write_report"]
