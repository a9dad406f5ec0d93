"""Test-wide settings.

Tests run in parallel workers (``pytest -n auto``) on few cores; one PyTorch
thread per process keeps workers from oversubscribing the cores. Subprocesses
started by tests inherit the setting through the environment, so their
numbers match the in-process ones bit for bit.
"""

import os

os.environ["OMP_NUM_THREADS"] = "1"
os.environ["MKL_NUM_THREADS"] = "1"

import torch  # noqa: E402

torch.set_num_threads(1)
