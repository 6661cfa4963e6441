"""The ``pokdeng`` command line: serve, demo, replay, verify, export, recall, rtp, simulate.

May import every other layer; nothing imports it.
"""

from pokdeng_service.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_REFUSED,
    EXIT_UNANCHORED,
    EXIT_UNAVAILABLE,
    EXIT_USAGE,
)
from pokdeng_service.cli.main import main

__all__ = ["EXIT_FAILED", "EXIT_OK", "EXIT_REFUSED", "EXIT_UNANCHORED", "EXIT_UNAVAILABLE", "EXIT_USAGE", "main"]
