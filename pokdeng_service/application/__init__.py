"""The application: commands as data, one pipeline that runs them, queries and views.

Holds the command types (``commands``), the pipeline (``pipeline``), the handlers by command
group, the queries and views (the notification log's entries: ``notifications``), the partition
router (``partitions``), the store settings (``config``) and the turn clock (``turn_clock``).

May import: ``pokdeng_core``, ``pokdeng_service.store``. Never audit internals, read models,
the API or the CLI (the audit is reached through ``pokdeng_service.audit``'s public functions,
which take the application as a reader of its record).
"""

from pokdeng_service.application.app import MAX_AMOUNT, PokdengApp

__all__ = ["MAX_AMOUNT", "PokdengApp"]
