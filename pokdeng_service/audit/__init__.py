"""Audits: verdicts, the pure replay of a round, the offline bundle, live verification, table pins.

May import: ``pokdeng_core``, ``pokdeng_service.store`` and the application's views and errors.
Live verification reads a store through the application's public reading methods only.
"""

from pokdeng_service.audit.verification import *  # noqa: F403
from pokdeng_service.audit.verification import (
    Verdict,
    bundle_bytes,
    check_chain,
    check_money,
    check_replay,
    export_bundle,
    replay_events,
    verify_bundle,
    verify_round,
    verify_rounds,
)

__all__ = [
    "Verdict",
    "bundle_bytes",
    "check_chain",
    "check_money",
    "check_replay",
    "export_bundle",
    "replay_events",
    "verify_bundle",
    "verify_round",
    "verify_rounds",
]
