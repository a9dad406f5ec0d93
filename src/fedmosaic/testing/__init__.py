"""What a plugin's own test suite imports to test its method with fedmosaic's contract.

:func:`check_method` runs every check of :mod:`fedmosaic.testing.contract`
on every tiny task of the method's kind; each check is importable on its own.

Examples
--------
>>> import tempfile
>>> from pathlib import Path
>>> from fedmosaic.methods.registry import METHODS
>>> check_method(METHODS["fedprox"], Path(tempfile.mkdtemp()))
"""

from fedmosaic.testing.contract import ContractError, check_method

__all__ = ["ContractError", "check_method"]
