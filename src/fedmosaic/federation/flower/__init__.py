"""The Flower bridge: fedmosaic messages over Flower (simulation or deployment).

Importing this package imports ``flwr``; the rest of the runtime does not
need it.
"""
