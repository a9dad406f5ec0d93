"""The largest values the configuration accepts for what sizes memory, threads, rounds and noise.

Every such key has a finite range, checked when the configuration is loaded,
so that no value hangs a run, allocates wildly or fails after a round has
run. The bounds are generous for real use; ``docs/experiments.md`` shows
each key's range, ``docs/reliability.md`` lists them. Every float of the
configuration is finite as well (``inf`` and ``nan`` are refused), except
where a key says it takes ``inf``.

Examples
--------
>>> from pydantic import TypeAdapter, ValidationError
>>> TypeAdapter(Width).validate_python(200)
200
>>> try:
...     TypeAdapter(Width).validate_python(10**9)
... except ValidationError as error:
...     print(error.errors()[0]["msg"])
Input should be less than or equal to 16384
"""

from __future__ import annotations

from typing import Annotated

from annotated_types import Ge, Le

MAX_ROUNDS = 100_000
"""Rounds of a run, and any key counted in rounds."""
MAX_CLIENTS = 100_000
"""Clients of a federation, and any key counted in clients."""
MAX_SAMPLES = 100_000_000
"""Rows or examples a key may ask for."""
MAX_WIDTH = 16_384
"""Units of one layer (hidden widths, embeddings, latents, channels)."""
MAX_LAYERS = 64
"""Layers a model may list."""
MAX_EPOCHS = 10_000
"""Local epochs or passes per round."""
MAX_BATCH = 1_000_000
"""Rows of one mini-batch."""
MAX_THREADS = 256
"""Threads or worker processes."""
MAX_LR = 100.0
"""Largest learning rate."""
MAX_NORM = 1e6
"""Largest clipping bound."""
MIN_NOISE = 0.01
"""Smallest non-zero noise multiplier (below it the accountant's epsilon overflows)."""
MAX_NOISE = 1000.0
"""Largest noise multiplier."""
MIN_EPSILON = 0.01
"""Smallest target epsilon."""
MAX_EPSILON = 100.0
"""Largest target epsilon (above it the guarantee means nothing, and the noise search may not end)."""
MAX_SEED = 2**32 - 1
"""Largest seed (NumPy's seeds are 32-bit)."""

Rounds = Annotated[int, Ge(1), Le(MAX_ROUNDS)]
"""A number of rounds, or a round."""
Clients = Annotated[int, Ge(1), Le(MAX_CLIENTS)]
"""A number of clients."""
Samples = Annotated[int, Ge(1), Le(MAX_SAMPLES)]
"""A number of rows or examples."""
Width = Annotated[int, Ge(1), Le(MAX_WIDTH)]
"""A layer's width."""
Epochs = Annotated[int, Ge(1), Le(MAX_EPOCHS)]
"""Epochs or passes."""
BatchSize = Annotated[int, Ge(1), Le(MAX_BATCH)]
"""A mini-batch size."""
Threads = Annotated[int, Ge(1), Le(MAX_THREADS)]
"""Threads or processes."""
