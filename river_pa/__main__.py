import sys

from river_pa.cli import main

sys.exit(main())
