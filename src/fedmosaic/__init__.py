"""fedmosaic: federated learning when every participant holds a different piece of the data."""

__version__ = "0.1.0"
