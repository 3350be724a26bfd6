"""`python -m river_pa.connectors` runs `river-pa serve`."""

import sys

from river_pa.cli import main

sys.exit(main(["serve", *sys.argv[1:]]))
