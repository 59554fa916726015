"""``python -m batfeed``: the ``batfeed`` command line."""

import sys

from batfeed.cli import main

sys.exit(main())
