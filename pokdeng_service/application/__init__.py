"""The application: commands as data, one pipeline that runs them, queries and views.

Holds the command types (``commands``), the pipeline (``pipeline``) and one try at a command
(``attempt``), the handlers by command group, the wallet port the handlers book money through
(``wallet_port``: the store's wallets; the platform's adapter is in ``pokdeng_service.wallet``), the
queries and views (the notification log's entries: ``notifications``), the partition router
(``partitions``), the store settings (``config``) and the turn clock (``turn_clock``).

May import: ``pokdeng_core`` and ``pokdeng_service.store`` (pyproject.toml's ``[tool.importlinter]``,
tests/test_layers.py). The audit, the read models and the platform's wallet sit above it: they take
the application as a reader of its record, and their callers (the API, the CLI) call them with it.


The package's names load on first use (``pokdeng_core.lazy``): importing one module of it (the principal, the
errors) loads no other, so that ``pokdeng auth new`` starts without the application.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pokdeng_core.lazy import lazy_exports

if TYPE_CHECKING:
    from pokdeng_service.application.app import MAX_AMOUNT, PokdengApp

__all__ = ["MAX_AMOUNT", "PokdengApp"]

__getattr__, __dir__ = lazy_exports(__name__, [("app", ("MAX_AMOUNT", "PokdengApp"))], [*globals(), *__all__])
