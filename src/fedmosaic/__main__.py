"""``python -m fedmosaic``: the command line, as ``fedmosaic``."""

from fedmosaic.cli import main

main()
