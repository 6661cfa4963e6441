"""``pokdeng wallet``: the transactions with a platform's wallet (docs/wallet.md).

* ``pokdeng wallet reconcile --wallet-url URL [--since T] [--until T] [--json]``: pokdeng's record
  (the store, read only) against the platform's ``ListTransactions`` for the period; every
  difference listed; exit 1 if there is one.
* ``pokdeng wallet pending [--json]``: what pokdeng has not finished with the platform: the transactions
  requested and not answered (a running server's recovery finishes them), the debits held by open
  rounds (their settlement or void finishes them), and debits stranded by a round closed without
  crediting or rolling them back; exit 1 if there is any, 0 if none (the guard before switching
  adapters, docs/wallet.md), and the money owed to players (a credit or rollback the platform refused, a
  credit unanswered for 15 minutes) until it is paid or resolved.
* ``pokdeng wallet resolve TX_ID --reason TEXT [--operator NAME]``: an operator records that an owed or
  stranded transaction was settled outside the protocol (say a manual credit on the platform): a
  ``tx_resolved`` fact in the round's outbox, with the reason; nothing is sent for it any more, and
  ``pending`` and ``pokdeng verify`` no longer count it as owed.

Times are ISO 8601 (``2026-03-14T15:00:00+00:00``; a date is its midnight UTC); the default period
is the last 24 hours. The text says money in its currency (``pokdeng_service.money.format_money``); ``--json``
keeps integer minor units, each amount with its ``currency``.

Exit codes as the rest of the CLI: 0, 1 (a difference; something unfinished), 2 bad usage, 3 (``resolve``) no
such transaction or not one to resolve, 4 the store, or the platform's wallet, cannot be reached.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

EXIT_OK, EXIT_DIFFERENT, EXIT_USAGE, EXIT_REFUSED, EXIT_UNAVAILABLE = 0, 1, 2, 3, 4
HUB88_RECONCILE = (
    "pokdeng: Hub88's wallet API lists no transactions to a supplier (its Supplier API has no transactions report; "
    "the Transactions API is its operators'), so pokdeng wallet reconcile cannot read Hub88's side. Instead: run "
    "pokdeng wallet pending (exit 0: nothing pending, held or owed on pokdeng's side), and compare pokdeng's record "
    "(each round's platform_transactions: pokdeng export ROUND) with Hub88's transactions report for the period "
    "(Hub88's back office, or your Hub88 account manager) by supplier_transaction_id, which is pokdeng's tx id "
    '(docs/wallet.md, "Hub88: reconciliation")'
)


def _time(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO 8601 time: {text!r}") from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def cmd_reconcile(args: argparse.Namespace) -> int:
    from pokdeng_service.wallet.platform import PlatformWallet, Unanswered
    from pokdeng_service.wallet.reconcile import reconcile

    url = args.wallet_url or os.environ.get("POKDENG_WALLET_URL", "")
    if (args.wallet or os.environ.get("POKDENG_WALLET")) == "hub88":
        print(HUB88_RECONCILE, file=sys.stderr)
        return EXIT_USAGE
    if not url:
        print("pokdeng: name the platform's wallet: --wallet-url (or POKDENG_WALLET_URL)", file=sys.stderr)
        return EXIT_USAGE
    until = args.until or datetime.now(tz=UTC)
    since = args.since or until - timedelta(days=1)
    from pokdeng_service.application.config import ConfigError
    from pokdeng_service.wallet.config import WalletConfig

    def option(name: str) -> str:
        return str(getattr(args, name) or os.environ.get(f"POKDENG_{name.upper()}", ""))

    try:
        config = WalletConfig(
            "remote", url, timeout=args.timeout, tls_ca=option("wallet_tls_ca"), tls_cert=option("wallet_tls_cert"),
            tls_key=option("wallet_tls_key"), sign_key=option("wallet_sign_key"),
            platform_keys=option("wallet_platform_keys"), protocol=int(option("wallet_protocol") or 1),
        )  # fmt: skip
    except ConfigError as error:
        print(f"pokdeng: {error}", file=sys.stderr)
        return EXIT_USAGE
    service = args.open_store(args)
    platform = PlatformWallet.connect(
        url, timeout=args.timeout, attempts=3, security=config.security(), protocol=config.protocol
    )
    try:
        report = reconcile(service.apps, platform, since, until, margin=args.margin)
    except Unanswered as error:  # (not a difference: nothing could be compared)
        print(f"pokdeng: the platform's wallet at {url} did not answer: {error}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    finally:
        platform.close()
    print(json.dumps(report.as_dict(), indent=2) if args.json else report.render())
    return EXIT_OK if report.ok else EXIT_DIFFERENT


def cmd_pending(args: argparse.Namespace) -> int:
    """Exit 0: nothing unfinished; 1: something is (a transaction pending, a debit held by an open round, or one
    stranded by a round closed without crediting or rolling it back). ``--json``: the list, amounts in minor units
    of each item's ``currency``; the text says them in their currency."""
    from pokdeng_service.wallet.reconcile import recorded_rounds, unfinished

    service = args.open_store(args)
    rounds = recorded_rounds(service.apps)
    found = unfinished(rounds)
    if args.json:
        print(json.dumps([item.as_dict() for item in found], indent=2))
    else:
        _say_pending(found, sum(len(r.txs) for r in rounds))
    return EXIT_DIFFERENT if found else EXIT_OK


def _say_pending(found: list[Any], total: int) -> None:
    """``pending``'s text: each item, the tally, the money owed per player (in its currency), what finishes them."""
    from pokdeng_service.money import format_money

    for item in found:
        print(item.render())
    states = ("pending", "held", "stranded", "owed")
    count = {state: sum(1 for i in found if i.state == state) for state in states}
    held = {i.round_id for i in found if i.state == "held"}
    owed: dict[tuple[str, str], int] = {}
    for item in found:
        if item.state in ("owed", "stranded"):
            key = (item.tx.player, item.currency)
            owed[key] = owed.get(key, 0) + item.tx.amount
    print(
        f"{len(found)} pending of {total} transactions: {count['pending']} calls to the platform unfinished, "
        f"{count['held']} debits held by {len(held)} open rounds, {count['stranded']} stranded, "
        f"{count['owed']} owed"
    )
    if owed:
        print("OWED to players: " + ", ".join(f"{p} {format_money(a, c)}" for (p, c), a in sorted(owed.items())))
        print("(pay them on the platform, then record it: pokdeng wallet resolve TX_ID --reason TEXT)")
    if held or count["pending"]:
        print("(a server on --wallet remote finishes them: its recovery sends what is pending, and each open "
              "round's settlement or void credits or rolls back its debits)")  # fmt: skip
    if count["stranded"]:
        print("(a stranded debit is finished by no server: its round was settled or voided outside the "
              "platform's wallet; credit or roll it back on the platform: docs/wallet.md)")  # fmt: skip


def _open_writable(args: argparse.Namespace) -> Any:
    """The store, to record a fact (one that exists: a mistyped SQLite path creates none)."""
    from pokdeng_service.application.config import StoreConfig
    from pokdeng_service.application.partitions import PartitionedPokdeng
    from pokdeng_service.store.readonly import sqlite_uri

    config = StoreConfig.from_args(
        db=args.db,
        postgres_url=args.postgres_url,
        partitions=args.partitions,
        vault_key_file=getattr(args, "vault_key_file", None),
        partition_urls=getattr(args, "partition_url", None),
    )
    if config.kind == "sqlite":
        for k in range(config.partitions):
            sqlite_uri(config.sqlite_file(k))  # (StoreUnavailable: "no such database", exit 4)
    return PartitionedPokdeng.open(config)


def cmd_resolve(args: argparse.Namespace) -> int:
    """Record an operator's resolution of an owed or stranded transaction (exit 0; 2: no reason given; 3: no such
    transaction, or not one to resolve)."""
    from pokdeng_service.money import format_money
    from pokdeng_service.wallet.reconcile import recorded_rounds

    reason = args.reason.strip()
    if not reason:
        print(
            "pokdeng: --reason is required: say how the transaction was settled (kept in the record)", file=sys.stderr
        )
        return EXIT_USAGE
    service = args.open_store(args)
    found = next((r for r in recorded_rounds(service.apps) if args.tx_id in r.txs), None)
    if found is None:
        print(f"pokdeng: no transaction {args.tx_id!r} in the store's outboxes", file=sys.stderr)
        return EXIT_REFUSED
    tx = found.txs[args.tx_id]
    if tx.resolved:
        print(f"{tx.tx_id}: already resolved by {tx.resolved_by or 'an operator'}: {tx.resolved}")
        return EXIT_OK
    stranded = tx in found.held() and found.closed()
    if not tx.owed() and not stranded:
        print(
            f"pokdeng: {tx.tx_id} ({tx.kind} {tx.status}) is not owed: only a credit or rollback the platform refused, "
            "a credit unanswered for 15 minutes, or a stranded debit is resolved by hand (a server on --wallet "
            "remote finishes the rest)",
            file=sys.stderr,
        )
        return EXIT_REFUSED
    from pokdeng_service.wallet.remote import record_resolution

    operator = args.operator or os.environ.get("USER", "") or "operator"
    record_resolution(found.app, found.round_id, tx.tx_id, reason, operator)
    what = f"{tx.kind} of {format_money(tx.amount, found.currency)} to {tx.player} (round {found.round_id})"
    print(f"{tx.tx_id}: {what} resolved by {operator}: {reason}")
    return EXIT_OK


def add_wallet_commands(
    sub: Any,
    store_options: Callable[[argparse.ArgumentParser], None],
    open_store: Callable[[argparse.Namespace], Any],
) -> None:
    """``pokdeng wallet reconcile|pending|resolve`` (registered by ``cli.main.build_parser``). ``open_store``: the
    CLI's read-only opening of the store (``common.open_read_only``), handed down; ``resolve`` opens it to write."""
    wallet = sub.add_parser("wallet", help="transactions with the platform's wallet: reconcile, pending, resolve")
    commands = wallet.add_subparsers(dest="wallet_command", required=True)
    for name, help_text, options, handler, writes in WALLET_COMMANDS:
        command = commands.add_parser(name, help=help_text)
        options(command)
        store_options(command)
        command.set_defaults(handler=handler, open_store=_open_writable if writes else open_store)


def _reconcile_options(reconcile: argparse.ArgumentParser) -> None:
    reconcile.add_argument(
        "--wallet", choices=["remote", "hub88"], help="the adapter whose platform is read: remote (pokdeng's protocol, "
        "the default) or hub88, whose API lists no transactions ($POKDENG_WALLET)",
    )  # fmt: skip
    reconcile.add_argument(
        "--wallet-url", help="the platform's wallet: host:port (gRPC) or http://... ($POKDENG_WALLET_URL)"
    )
    for flag, what in (
        ("--wallet-tls-ca", "CA file verifying the platform's certificate (grpcs://, https://)"),
        ("--wallet-tls-cert", "pokdeng's client certificate (mutual TLS)"),
        ("--wallet-tls-key", "its private key (chmod 600)"),
        ("--wallet-sign-key", "the key signing every request (chmod 600)"),
        ("--wallet-platform-keys", "the platform's public keys: its answers verified"),
    ):
        reconcile.add_argument(flag, help=f"{what} ($POKDENG_{flag[2:].upper().replace('-', '_')})")
    reconcile.add_argument(
        "--wallet-protocol", type=int, choices=[1, 2], help="the platform's protocol, 1 or 2 ($POKDENG_WALLET_PROTOCOL)"
    )
    reconcile.add_argument("--since", type=_time, help="the period's start (ISO 8601; default: 24 hours ago)")
    reconcile.add_argument("--until", type=_time, help="the period's end (ISO 8601; default: now)")
    reconcile.add_argument("--margin", type=float, default=300.0, help="seconds around the period read of the platform")
    reconcile.add_argument("--timeout", type=float, default=10.0, help="seconds one call to the platform may take")
    reconcile.add_argument(
        "--json", action="store_true", help="the report as JSON (amounts in minor units, each with its currency)"
    )


def _pending_options(pending: argparse.ArgumentParser) -> None:
    pending.add_argument(
        "--json", action="store_true", help="the list as JSON (amounts in minor units, each with its currency)"
    )


def _resolve_options(resolve: argparse.ArgumentParser) -> None:
    resolve.add_argument("tx_id", help="the transaction's id (as pokdeng wallet pending lists it)")
    resolve.add_argument("--reason", required=True, help="how it was settled, say the platform's manual credit ref")
    resolve.add_argument("--operator", help="who resolves it (default: $USER)")


# ``wallet``'s commands, in the order of its --help: name, help, its own options (the store's follow), its
# handler, and whether it writes to the store (else it opens the store read only).
WALLET_COMMANDS: tuple[
    tuple[str, str, Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int], bool], ...
] = (
    ("reconcile", "compare pokdeng's record with the platform's for a period", _reconcile_options, cmd_reconcile,
     False),
    ("pending", "what is not finished with the platform (exit 1 if anything): pending, held, stranded",
     _pending_options, cmd_pending, False),
    ("resolve", "record that an owed or stranded transaction was settled by hand (with a reason)", _resolve_options,
     cmd_resolve, True),
)  # fmt: skip
