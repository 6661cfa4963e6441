"""Switching a deployment's wallet adapter: a server does not start on an adapter that cannot finish the store's money.

A round's stakes are settled, voided and released only through the adapter that took them
(``port.InternalPort`` refuses a round of the platform's; ``remote.RemotePort`` books a round the
internal wallets hold on them). A server on the internal wallets cannot finish what the platform's
wallet holds: the debits of open rounds (their stakes in play) and the transactions pending (a
rollback, a credit, an unanswered debit: only the recovery of a server on ``--wallet remote`` sends
them). ``check_switch`` lists those, from every outbox of the store (read by topic, as ``pokdeng
wallet pending`` does), and refuses the start (``ConfigError``) unless told to start anyway.

The other way needs no check: a server on ``--wallet remote`` finishes a round opened on the internal
wallets on them (docs/wallet.md, "Switching adapters").
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from pokdeng_service.application.config import ConfigError
from pokdeng_service.wallet.config import WalletConfig
from pokdeng_service.wallet.reconcile import Unfinished, recorded_rounds, unfinished

log = logging.getLogger("pokdeng.wallet")

SHOWN = 20  # rounds named in the refusal (then a count)


def unfinished_for(apps: Iterable[Any], config: WalletConfig) -> list[Unfinished]:
    """What the store holds that a server on ``config``'s adapter cannot finish (empty on ``remote``)."""
    if config.remote:
        return []
    return [u for u in unfinished(recorded_rounds(apps)) if u.state != "stranded"]  # (no server finishes those)


def describe(items: list[Unfinished]) -> str:
    """The rounds, each with what it holds on the platform's wallet, one line each."""
    rounds: dict[str, list[Unfinished]] = {}
    for item in items:
        rounds.setdefault(item.round_id, []).append(item)
    lines = []
    for round_id, found in list(rounds.items())[:SHOWN]:
        held = [f"{u.tx.player} {u.tx.amount}" for u in found if u.state == "held"]
        pending = [u.tx.tx_id for u in found if u.state == "pending"]
        parts = [f"open, debits held: {', '.join(held)}"] if held else []
        if pending:
            more = ", ..." if len(pending) > 3 else ""
            parts.append(f"{len(pending)} transactions pending ({', '.join(pending[:3])}{more})")
        lines.append(f"  round {round_id}: {'; '.join(parts)}")
    if len(rounds) > SHOWN:
        lines.append(f"  ... and {len(rounds) - SHOWN} more rounds (`pokdeng wallet pending` lists them all)")
    return "\n".join(lines)


def check_switch(apps: Iterable[Any], config: WalletConfig, *, allow: bool = False) -> list[Unfinished]:
    """Refuse (``ConfigError``) to serve on ``config``'s adapter while the store holds money only the other adapter
    can finish; with ``allow`` start anyway (logged: those rounds are refused until served by their adapter).
    Returns what was found."""
    items = unfinished_for(apps, config)
    if not items:
        return items
    rounds = len({u.round_id for u in items})
    problem = (
        f"the store holds money on the platform's wallet that a server on the internal wallets (--wallet "
        f"internal, the default) cannot finish, in {rounds} round{'s' if rounds != 1 else ''}:\n{describe(items)}\n"
    )
    if not allow:
        raise ConfigError(
            f"{problem}Serve with --wallet remote --wallet-url URL (POKDENG_WALLET=remote) until they are finished: "
            "play each open round out or void it (VoidRound: its debits are rolled back), and let the recovery send "
            "what is pending; `pokdeng wallet pending` exits 0 when nothing is left. Then switch (docs/wallet.md, "
            '"Switching adapters"). --wallet-allow-unfinished starts anyway: these rounds are then refused '
            "(FAILED_PRECONDITION, WALLET_ADAPTER_MISMATCH) until a server on the platform's wallet finishes them."
        )
    log.warning(
        "wallet: %sstarted anyway (--wallet-allow-unfinished): these rounds are refused until a server on "
        "--wallet remote finishes them",
        problem,
    )
    return items


__all__ = ["check_switch", "describe", "unfinished_for"]
