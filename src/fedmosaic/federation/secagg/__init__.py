"""Secure aggregation: the server sums the clients' updates without seeing any one of them.

:class:`SecureAggregation` (the server side) and :class:`SecureClient` (a
wrapper around any method's client) exchange ordinary messages through the
round, so the protocol runs unchanged on every engine.
"""

from fedmosaic.federation.secagg.client import SecureClient
from fedmosaic.federation.secagg.server import SecureAggregation

__all__ = ["SecureAggregation", "SecureClient"]
