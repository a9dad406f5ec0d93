"""User-facing errors.

Every error a user can cause (bad configuration, missing data file, invalid
message) derives from :class:`FedmosaicError`. The command line prints its
message on one line and exits with code 2, without a traceback.
"""


class FedmosaicError(Exception):
    """An error caused by the user's input, reported as one line."""


class ConfigError(FedmosaicError, ValueError):
    """A configuration value is unknown, of the wrong type or impossible.

    Parameters
    ----------
    field : str
        Dotted path of the offending field, e.g. ``"partition.alpha"``.
    message : str
        What is accepted, e.g. ``"must be > 0 (got -1)"``.
    """

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.message = message
        text = f"{field}: {message}" if field else message
        # Keys and values come from the user: escape line breaks so the report stays one line.
        super().__init__(text.replace("\r", "\\r").replace("\n", "\\n"))


class UntrainedRunError(FedmosaicError):
    """A run ended without a single trained round: it has no result to report.

    Every round was skipped (no valid reply, every sampled client dropped out),
    so its model is the initial one. The run's output folder is left as it was.
    """


class DataFileMissing(FedmosaicError, FileNotFoundError):
    """A dataset file is not in the data directory.

    Parameters
    ----------
    path : str
        The file that was looked for.
    searched : str
        The folder that was searched and how it was chosen.
    source : str
        Where the dataset is published.
    """

    def __init__(self, path: str, searched: str, source: str) -> None:
        self.path = path
        self.searched = searched
        self.source = source
        super().__init__(f"data file not found: {path} (searched {searched}; the dataset is published at {source})")
