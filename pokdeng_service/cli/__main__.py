"""``python -m pokdeng_service.cli``: the ``pokdeng`` command."""

import sys

from pokdeng_service.cli.main import main

sys.exit(main())
