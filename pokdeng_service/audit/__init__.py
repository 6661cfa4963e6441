"""Audits: verdicts, the pure replay of a round, the offline bundle, live verification, table pins.

* ``verdicts``: ``Verdict``, the outcome of an audit, check by check;
* ``replay``: pure functions on recorded events: decisions read back, the chain, replay and
  money checks (no store access);
* ``bundle``: the round bundle's format, ``export_bundle``, ``bundle_bytes`` and the offline
  ``verify_bundle``;
* ``live``: ``verify_round``, ``verify_rounds``, ``replay_round`` and ``round_facts``, which read a store, and
  ``AuditedRecord``, everything they (and ``export_bundle``) read of an application;
* ``table_pins``: where a verification finds a table's pin of a round's last digest;
* ``store``: ``verify_store``, every stream of a store read once and checked, alone and against
  the others (what ``pokdeng verify --all`` runs);
* ``anchors``: signed tree heads over the store's log of closed rounds: a bundle's anchor
  (``check_anchor``), ``verify_head``, ``verify_consistency`` and the whole log (``audit_log``).

May import: ``pokdeng_core``, ``pokdeng_service.store`` and the application's views and errors.
Live verification reads a store through the application's public reading methods only
(``AuditedRecord``); the application never imports the audit: its callers (the API, the CLI) call the
audit with the application.

The names below load on first use (``__getattr__``, PEP 562): ``pokdeng verify BUNDLE`` imports
``audit.bundle`` alone, and with it no store application, library or server (``from pokdeng_service
import audit; audit.verify_round(...)`` works as before).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pokdeng_core.lazy import lazy_exports

if TYPE_CHECKING:
    from pokdeng_service.audit.anchors import audit_log, check_anchor, verify_consistency, verify_head
    from pokdeng_service.audit.bundle import BUNDLE_FORMAT, BUNDLE_VERSION, verify_bundle
    from pokdeng_service.audit.export import bundle_bytes, export_bundle
    from pokdeng_service.audit.live import AuditedRecord, replay_round, round_facts, verify_round, verify_rounds
    from pokdeng_service.audit.replay import (
        check_chain,
        check_money,
        check_replay,
        decision_of,
        decisions,
        group_by_command,
        replay_events,
        revealed_seed,
    )
    from pokdeng_service.audit.store import verify_store
    from pokdeng_service.audit.table_pins import TablePins, table_finish
    from pokdeng_service.audit.verdicts import Check, Verdict

_EXPORTS = (
    ("anchors", ("audit_log", "check_anchor", "verify_consistency", "verify_head")),
    ("bundle", ("BUNDLE_FORMAT", "BUNDLE_VERSION", "verify_bundle")),
    ("export", ("bundle_bytes", "export_bundle")),
    ("live", ("AuditedRecord", "replay_round", "round_facts", "verify_round", "verify_rounds")),
    ("replay", (
        "check_chain", "check_money", "check_replay", "decision_of", "decisions", "group_by_command",
        "replay_events", "revealed_seed",
    )),
    ("store", ("verify_store",)),
    ("table_pins", ("TablePins", "table_finish")),
    ("verdicts", ("Check", "Verdict")),
)  # fmt: skip
__all__ = [
    "BUNDLE_FORMAT",
    "BUNDLE_VERSION",
    "AuditedRecord",
    "Check",
    "TablePins",
    "Verdict",
    "audit_log",
    "bundle_bytes",
    "check_anchor",
    "check_chain",
    "check_money",
    "check_replay",
    "decision_of",
    "decisions",
    "export_bundle",
    "group_by_command",
    "replay_events",
    "replay_round",
    "revealed_seed",
    "round_facts",
    "table_finish",
    "verify_bundle",
    "verify_consistency",
    "verify_head",
    "verify_round",
    "verify_rounds",
    "verify_store",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, [*globals(), *__all__])
