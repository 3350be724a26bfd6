"""`python -m river_pa.connectors` runs `river-pa serve`."""

import sys

from river_pa.connectors.cli import main

sys.exit(main())
