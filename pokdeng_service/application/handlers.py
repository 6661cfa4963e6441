"""Every command's handler, registered with the pipeline by importing the modules that define them."""

from __future__ import annotations

from pokdeng_service.application import checkpoints, rounds, tables, wallets
from pokdeng_service.application.commands import COMMANDS
from pokdeng_service.application.pipeline import HANDLERS

MODULES = (wallets, tables, rounds, checkpoints)
MISSING = tuple(c.__name__ for c in COMMANDS if c not in HANDLERS)
if MISSING:  # pragma: no cover - a command type without a handler is a programming error
    raise ImportError(f"commands without a handler: {', '.join(MISSING)}")
