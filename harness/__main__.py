"""`python -m harness` is the `membrane` command."""

import sys

from harness.cli import main

sys.exit(main())
