"""The names under which SCAFFOLD's messages and states carry control variates."""

from __future__ import annotations

CONTROL = "control/"
"""Prefix of the server control variate ``c`` in messages and in the server state."""
CONTROL_DELTA = "control_delta/"
"""Prefix of a client's change of its control variate ``c_i+ - c_i`` in replies."""
LOCAL_CONTROL = "local_control/"
"""Prefix of the client control variate ``c_i`` in the client state."""
