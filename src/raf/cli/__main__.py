"""`python -m raf.cli` runs the raf program."""

import sys

from raf.cli.main import main

sys.exit(main())
