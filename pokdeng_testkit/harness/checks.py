"""The end-of-run audit: through the API of a running server, then directly in the store.

``audit_api`` (a server running) checks, and ``audit_store`` (servers stopped) checks again from
the store itself:

* **nothing lost or duplicated**: every stream's versions are 1..n, contiguous, each once; every
  request id has one CommandRecord; every command a client got an answer for is recorded (once);
  every round event was caused by a recorded request;
* **every round complete or voided**: no table has a current round; each round 1..round_no of
  every table is closed, settled or voided; its events are contiguous up to its version;
* **no double payout**: in each wallet's statement, each round it staked in has exactly one
  closing line (RoundSettled or ReservationReleased), at most one RoundSettled, and reservations
  that net to zero; the RoundSettled amount is the round's result for that wallet;
* **balances**: every wallet's balance is the sum of its statement (line by line), nothing stays
  reserved; the wallets' deposits and withdrawals are exactly the acknowledged ones;
* **money balances to zero**: wallets + tables' house_net + commission = deposits - withdrawals;
  each settled round's nets + house_net + commission = 0;
* **every closed round verifies** (``AuditService.VerifyRound`` ok: chain, commitment, replay, money).

Each returns a ``Findings``: the problems found (empty: all good) and what was counted (``findings`` holds
them, the checks the two share and the end of a run: ``findings_lines``, ``finish``).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pokdeng_client.v1 import pokdeng_pb2 as pb
from pokdeng_service import audit

from .client import HarnessClient, stream_name
from .findings import Findings, RoundFacts, check_log, check_money, check_statement, contiguous, short
from .server import ServerProcess
from .tokens import Tokens

STATEMENT_KINDS = {  # a statement entry's kind as the store names it
    pb.STATEMENT_ENTRY_KIND_DEPOSITED: "Deposited",
    pb.STATEMENT_ENTRY_KIND_WITHDRAWN: "Withdrawn",
    pb.STATEMENT_ENTRY_KIND_FUNDS_RESERVED: "FundsReserved",
    pb.STATEMENT_ENTRY_KIND_ROUND_SETTLED: "RoundSettled",
    pb.STATEMENT_ENTRY_KIND_RESERVATION_RELEASED: "ReservationReleased",
}


def audit_api(
    target: str,
    tokens: Tokens,
    tables: Sequence[str],
    wallets: Sequence[str],
    ledger: Mapping[str, tuple[str, int]],
    acked: set[str],
    *,
    verify_workers: int = 4,
    feed: Sequence[tuple[int, str, str, int]] | None = None,
    partition: int = 0,
) -> Findings:
    """Every check through the gRPC API of the server at ``target``; ``feed``: what a client of the event
    feed received (``feed.FeedFollower.items``), which must be the log exactly. ``partition``: the store whose
    log is read (give the tables, wallets, ledger and requests of that partition)."""
    found = Findings()
    where = "api"
    client = HarnessClient(target, tokens.operator, patience=60.0)
    auditor = client.as_token(tokens.auditor)
    try:
        rounds, house, closed = _api_rounds(found, client, tables, where)
        _api_verify(found, auditor, closed, verify_workers, where)
        total = sum(_api_wallet(found, client, wallet_id, rounds, ledger, where) for wallet_id in wallets)
        check_money(found, total, house, ledger, where)
        found.counts["wallets"] = len(wallets)
        entries = list(_api_log(auditor, partition))
        check_log(found, entries, acked, where)
        if feed is not None:
            _check_feed(found, feed, entries, where)
        _api_listed(found, client, tables, where)
    finally:
        client.close()
    return found


def _api_rounds(
    found: Findings, client: HarnessClient, tables: Sequence[str], where: str
) -> tuple[dict[str, RoundFacts], int, list[str]]:
    """Every round of the tables read through the API: each table with none open, each round's events
    contiguous, closed, and balanced (settled) or moving no money (voided). The closed rounds' facts, the
    house's net and commission, and the closed rounds in order."""
    rounds: dict[str, RoundFacts] = {}
    house = 0
    closed: list[str] = []
    for table_id in tables:
        table = client.send("TableService", "GetTable", table_id=table_id).table
        open_round = table.current_round_id
        found.check(not open_round, f"{where}: table {table_id} has round {open_round} open")
        house += table.house_net + table.commission
        for n in range(1, table.round_no + 1):
            round_id = f"{table_id}#{n}"
            r = client.send("RoundService", "GetRound", round_id=round_id).round
            facts = _api_round(found, round_id, r, where)
            if facts is not None:
                rounds[round_id] = facts
                closed.append(round_id)
    return rounds, house, closed


def _api_round(found: Findings, round_id: str, r: Any, where: str) -> RoundFacts | None:
    """One round's checks (``_api_rounds``); its facts, or None if it is not closed."""
    found.counts["rounds"] += 1
    sequences = [e.sequence for e in r.events]
    found.check(
        bool(sequences) and contiguous(sequences, sequences[0]) and sequences[-1] == r.version,
        f"{where}: round {round_id} events {short(sequences)} are not contiguous up to {r.version}",
    )
    if r.phase != pb.ROUND_PHASE_CLOSED:
        found.bad(f"{where}: round {round_id} is {pb.RoundPhase.Name(r.phase)}, not closed")
        return None
    nets = {res.player: res.net for res in r.results}
    outcome = pb.RoundOutcome.Name(r.outcome).removeprefix("ROUND_OUTCOME_").lower()  # "settled", ...
    found.counts[outcome if r.outcome else "no outcome"] += 1
    if r.outcome == pb.ROUND_OUTCOME_SETTLED:
        total = sum(nets.values()) + r.house_net + r.commission
        found.check(total == 0, f"{where}: round {round_id} does not balance: {total}")
    elif r.outcome == pb.ROUND_OUTCOME_VOIDED:
        found.check(not any(nets.values()), f"{where}: voided round {round_id} moved money {nets}")
    else:
        found.bad(f"{where}: round {round_id} closed with outcome {pb.RoundOutcome.Name(r.outcome)}")
    return RoundFacts(outcome, nets)


def _api_verify(found: Findings, auditor: HarnessClient, closed: Sequence[str], workers: int, where: str) -> None:
    """Every closed round verified by the server (AuditService/VerifyRound), ``workers`` at a time."""

    def verify(round_id: str) -> tuple[str, bool, str]:
        verdict = auditor.send("AuditService", "VerifyRound", round_id=round_id)
        return round_id, verdict.ok, verdict.first_difference

    with ThreadPoolExecutor(max_workers=workers) as pool:
        for round_id, ok, difference in pool.map(verify, closed):
            found.counts["verified"] += ok
            found.check(ok, f"{where}: round {round_id} does not verify: {difference}")


def _api_wallet(
    found: Findings,
    client: HarnessClient,
    wallet_id: str,
    rounds: Mapping[str, RoundFacts],
    ledger: Mapping[str, tuple[str, int]],
    where: str,
) -> int:
    """A wallet's statement, every page of it, checked against its balance, the rounds and the ledger; its
    balance."""
    wallet = client.send("WalletService", "GetWallet", wallet_id=wallet_id).wallet
    lines: list[tuple[str, int, int, int, str, str]] = []
    token = ""
    for _ in range(100_000):
        page = client.send(
            "WalletService", "ListStatementEntries", wallet_id=wallet_id, page_size=1000, page_token=token
        )
        lines.extend(_line(e) for e in page.entries)
        if not page.next_page_token:
            break
        token = page.next_page_token
    check_statement(found, wallet_id, wallet.balance, wallet.reserved, lines, rounds, ledger, where)
    balance: int = wallet.balance
    return balance


def _api_log(auditor: HarnessClient, partition: int) -> Iterable[tuple[int, str, str, int, str, str]]:
    """The partition's log through the event feed, up to its head: (position, stream, id, version, event,
    request id)."""
    after = 0
    for _ in range(1_000_000):
        batches = auditor.stubs["EventService"].SubscribeEvents(
            pb.SubscribeEventsRequest(after_position=after, batch_size=1000, stop_at_head=True, partition=partition),
            metadata=auditor.metadata,
            timeout=120,
        )
        got = 0
        for batch in batches:
            for n in batch.events:
                got += 1
                event = n.event
                kind = stream_name(n.stream_kind)
                request = event.request_accepted.request_id if n.stream_kind == pb.STREAM_KIND_REQUEST else ""
                yield n.position, kind, n.stream_id, event.sequence, event.WhichOneof("event") or "", request
                after = n.position
        if not got:
            return


def _check_feed(
    found: Findings,
    feed: Sequence[tuple[int, str, str, int]],
    entries: Sequence[tuple[int, str, str, int, str, str]],
    where: str,
) -> None:
    """What the feed's client received is the log exactly."""
    received = list(feed)
    logged = [(p, kind, ident, version) for p, kind, ident, version, _e, _r in entries]
    if received != logged:
        diverge = next((i for i, (a, b) in enumerate(zip(received, logged, strict=False)) if a != b), None)
        found.bad(
            f"{where}: the event feed, resumed across kills, delivered {len(received)} events, the log has "
            f"{len(logged)}; first difference at index {diverge}"
        )
    found.counts["feed events"] = len(received)


def _api_listed(found: Findings, client: HarnessClient, tables: Sequence[str], where: str) -> None:
    """The round index (read models) behind ListRounds: every closed round once, newest first."""
    for table_id in tables:
        table = client.send("TableService", "GetTable", table_id=table_id).table
        expected = [f"{table_id}#{n}" for n in range(table.round_no, max(0, table.round_no - 100), -1)]
        listed: list[str] = []
        for _ in range(100):  # the read models follow the log in the background: give them a moment
            answer = client.send("RoundService", "ListRounds", table_id=table_id, page_size=100)
            listed = [r.round_id for r in answer.rounds]
            if listed == expected:
                break
            time.sleep(0.1)
        found.check(
            listed == expected,
            f"{where}: ListRounds({table_id}) gives {_short_ids(listed)}, expected {_short_ids(expected)}",
        )


def _line(entry: pb.StatementEntry) -> tuple[str, int, int, int, str, str]:
    """A statement entry as ``check_statement`` reads it (its kind as the store names it)."""
    kind = STATEMENT_KINDS.get(entry.kind, pb.StatementEntryKind.Name(entry.kind))
    return kind, entry.amount, entry.reserved_change, entry.balance, entry.round_id, entry.reference


def _short_ids(ids: Sequence[str]) -> str:
    return str(list(ids)) if len(ids) <= 6 else f"{list(ids[:3])}...{list(ids[-2:])} ({len(ids)})"


def audit_store(
    store: Any,
    tables: Sequence[str],
    wallets: Sequence[str],
    ledger: Mapping[str, tuple[str, int]],
    acked: set[str],
    *,
    verify_sample: int = 50,
) -> Findings:
    """The same checks again, reading the store directly (``store.open_app()``), servers stopped."""
    found = Findings()
    where = "store"
    app = store.open_app()
    try:
        rounds, house, closed = _store_rounds(found, app, tables, where)
        step = max(1, len(closed) // max(1, verify_sample))
        for round_id in closed[::step]:
            verdict = audit.verify_round(app, round_id, check_wallets=True)
            found.counts["store verified"] += verdict.ok
            found.check(verdict.ok, f"{where}: round {round_id} does not verify: {verdict.render()[:300]}")
        total = 0
        for wallet_id in wallets:
            view = app.get_wallet(wallet_id)
            lines = [
                (s.kind, s.amount, s.reserved_change, s.balance_after, s.round_id or "", s.reference or "")
                for s in _statement(app, wallet_id)
            ]
            check_statement(found, wallet_id, view.balance, view.reserved, lines, rounds, ledger, where)
            total += view.balance
        check_money(found, total, house, ledger, where)
        check_log(found, _store_log(app), acked, where)
        _check_read_models(found, store, app, tables, wallets)
    finally:
        app.close()
    return found


def _store_rounds(
    found: Findings, app: Any, tables: Sequence[str], where: str
) -> tuple[dict[str, RoundFacts], int, list[str]]:
    """Every round of the tables read from the store: each table with none open, each round's events
    contiguous and closed. The closed rounds' facts, the house's net and commission, the closed rounds."""
    rounds: dict[str, RoundFacts] = {}
    house = 0
    closed: list[str] = []
    for table_id in tables:
        table = app.get_table(table_id)
        found.check(table.current_round is None, f"{where}: table {table_id} has round {table.current_round} open")
        house += table.house_net + table.commission
        for n in range(1, table.round_no + 1):
            round_id = f"{table_id}#{n}"
            view = app.get_round(round_id)
            positions = [e.position for e in view.events]
            found.check(
                contiguous(positions, positions[0]) if positions else False,
                f"{where}: round {round_id} events {short(positions)} are not contiguous",
            )
            if view.phase != "closed":
                found.bad(f"{where}: round {round_id} is {view.phase}, not closed")
                continue
            closed.append(round_id)
            rounds[round_id] = RoundFacts(view.outcome or "", _nets(view))
    return rounds, house, closed


def audit_run(
    server: ServerProcess,
    store: Any,
    tokens: Tokens,
    tables: Sequence[str],
    wallets: Sequence[str],
    ledger: Mapping[str, tuple[str, int]],
    acked: set[str],
    *,
    feed: Sequence[tuple[int, str, str, int]] | None = None,
) -> Findings:
    """The end of a run of one server: ``audit_api`` through it, then the server stopped and ``audit_store``."""
    found = audit_api(server.target, tokens, tables, wallets, ledger, acked, feed=feed)
    server.stop()
    found.merge(audit_store(store, tables, wallets, ledger, acked))
    return found


def _store_log(app: Any) -> Iterable[tuple[int, str, str, int, str, str]]:
    """The store's log, read directly: (position, stream, id, version, kind, request id or causing command)."""
    after = 0
    for _ in range(1_000_000):
        page = app.read_notifications(after, 10_000)
        if not page:
            return
        for n in page:
            request = n.data.get("request_id", "") if n.stream == "request" else ""
            caused = n.data.get("command_id", "") if isinstance(n.data, dict) else ""
            yield n.position, n.stream, n.stream_id, n.stream_version, n.kind, request or caused
        after = page[-1].position


def _check_read_models(found: Findings, store: Any, app: Any, tables: Sequence[str], wallets: Sequence[str]) -> None:
    """The read models in the store, caught up from where the killed servers left them, equal the streams."""
    from pokdeng_service.readmodels import ReadModels

    where = "read models"
    models = ReadModels(store.config().env(0))
    try:
        models.catch_up(app)
        found.check(not models.open_rounds(None), f"{where}: open rounds {models.open_rounds(None)[:3]}")
        for table_id in tables:
            table = app.get_table(table_id)
            totals = models.house_totals(table_id)
            found.check(
                (totals.house_net, totals.commission, totals.rounds)
                == (table.house_net, table.commission, table.round_no),
                f"{where}: table {table_id} totals {totals} != house {table.house_net}, commission "
                f"{table.commission}, rounds {table.round_no}",
            )
            listed = [r.round_id for r in models.last_rounds(table_id=table_id, player=None, limit=1000)]
            expected = [f"{table_id}#{n}" for n in range(max(1, table.round_no - 999), table.round_no + 1)]
            found.check(listed == expected, f"{where}: {table_id} round history {_short_ids(listed)}")
        for wallet_id in wallets:
            view = app.get_wallet(wallet_id)
            balance = models.wallet_balance(wallet_id)
            found.check(
                balance is not None and (balance.balance, balance.reserved) == (view.balance, view.reserved),
                f"{where}: wallet {wallet_id} {balance} != balance {view.balance}, reserved {view.reserved}",
            )
            mine = [(s.kind, s.amount, s.balance_after, s.round_id) for s in _statement(models, wallet_id)]
            theirs = [(s.kind, s.amount, s.balance_after, s.round_id) for s in _statement(app, wallet_id)]
            found.check(mine == theirs, f"{where}: wallet {wallet_id} statement ({len(mine)} lines) != the stream's")
            found.counts[f"{where} wallets"] += 1
    finally:
        models.close()


def _nets(view: Any) -> dict[str, int]:
    """Each wallet's net in a settled round, from its ``round_settled`` event."""
    for event in view.events:
        if event.kind == "round_settled":
            return {str(player): int(net) for player, _reserved, net in event.data["wallets"]}
    return {}


def _statement(source: Any, wallet_id: str) -> list[Any]:
    """A wallet's whole statement from the app (``wallet_statement``) or the read models (``statement``)."""
    read = getattr(source, "wallet_statement", None) or source.statement
    lines: list[Any] = []
    after = 0
    for _ in range(100_000):
        page = read(wallet_id, after=after, limit=1000)
        if not page:
            break
        lines.extend(page)
        after = page[-1].position
    return lines


# --- the reports' common ending ----------------------------------------------------------------
