"""``python -m planlang``: the same as the ``planlang`` command."""

import sys

from planlang.cli import main

sys.exit(main())
