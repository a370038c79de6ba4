"""``python -m lumen inspect MODEL``: the same as the ``lumen`` console command."""

import sys

from .cli import main

sys.exit(main())
