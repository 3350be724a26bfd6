"""`python -m connectors` runs `river-pa serve`."""

import sys

from connectors.cli import main

sys.exit(main())
