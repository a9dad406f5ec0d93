"""``fedmosaic explore``: a local web page over a trained F-CMs model.

Pick a test row, click a concept's value to set it, and watch the model
recompute its descendants and the task, beside the true network's answer.

Examples
--------
>>> from pathlib import Path
>>> from fedmosaic.explore import open_run
>>> explorer = open_run(Path("runs/demo"))                     # doctest: +SKIP
>>> explorer.answer(explorer.examples.iloc[0], {"smoke": "yes"}).task  # doctest: +SKIP
[0.31, 0.69]
"""

from fedmosaic.explore.opening import open_run

__all__ = ["open_run"]
