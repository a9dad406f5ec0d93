"""The installed fedmosaic's version, importable by every layer without the package's entry points."""

__version__ = "0.1.0"
