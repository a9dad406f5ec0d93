"""The names ``train.device`` accepts, checked without PyTorch (a configuration is checked before anything computes)."""

from __future__ import annotations

import re

from fedmosaic.errors import ConfigError

DEVICE_FIELD = "train.device"
"""The setting that names the device, as errors name it."""

DEVICE_PATTERN = r"^(auto|cpu|mps|cuda(:\d{1,3})?)$"
"""The device names :func:`fedmosaic.devices.resolve_device` accepts."""


def check_device_name(name: str) -> str:
    """``name``, if it names a device, whether or not this machine has it.

    Raises
    ------
    ConfigError
        On one line naming ``train.device``, for a name of no device.

    Examples
    --------
    >>> check_device_name("cuda:1")
    'cuda:1'
    >>> check_device_name("tpu")
    Traceback (most recent call last):
    ...
    fedmosaic.errors.ConfigError: train.device: expected 'auto', 'cpu', 'cuda', 'cuda:N' or 'mps', got 'tpu'
    """
    if re.fullmatch(DEVICE_PATTERN, name) is None:
        raise ConfigError(DEVICE_FIELD, f"expected 'auto', 'cpu', 'cuda', 'cuda:N' or 'mps', got {name!r}")
    return name
