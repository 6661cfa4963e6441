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

Each returns a ``Findings``: the problems found (empty: all good) and what was counted.
"""

from __future__ import annotations

import json
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pokdeng_client.v1 import pokdeng_pb2 as pb
from pokdeng_service import audit

from .client import HarnessClient, stream_name
from .tokens import Tokens

CLOSING = ("RoundSettled", "ReservationReleased")
STATEMENT_KINDS = {  # a statement entry's kind as the store names it
    pb.STATEMENT_ENTRY_KIND_DEPOSITED: "Deposited",
    pb.STATEMENT_ENTRY_KIND_WITHDRAWN: "Withdrawn",
    pb.STATEMENT_ENTRY_KIND_FUNDS_RESERVED: "FundsReserved",
    pb.STATEMENT_ENTRY_KIND_ROUND_SETTLED: "RoundSettled",
    pb.STATEMENT_ENTRY_KIND_RESERVATION_RELEASED: "ReservationReleased",
}
MAX_LISTED = 20


@dataclass
class Findings:
    problems: list[str] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)

    def bad(self, text: str) -> None:
        self.problems.append(text)

    def check(self, ok: bool, text: str) -> None:
        if not ok:
            self.bad(text)

    @property
    def ok(self) -> bool:
        return not self.problems

    def summary(self) -> str:
        shown = self.problems[:MAX_LISTED]
        more = f"\n  ... and {len(self.problems) - MAX_LISTED} more" if len(self.problems) > MAX_LISTED else ""
        return "\n".join(f"  - {p}" for p in shown) + more

    def merge(self, other: Findings) -> None:
        self.problems.extend(other.problems)
        self.counts.update(other.counts)


def contiguous(values: Sequence[int], first: int = 1) -> bool:
    return list(values) == list(range(first, first + len(values)))


@dataclass
class RoundFacts:
    outcome: str
    nets: dict[str, int]


def check_log(
    found: Findings,
    notes: Iterable[tuple[int, str, str, int, str, str]],
    acked: set[str],
    where: str,
) -> tuple[int, Counter[str]]:
    """Notifications (position, stream kind, stream id, version, event kind, request id or caused-by)."""
    versions: dict[tuple[str, str], list[int]] = defaultdict(list)
    requests: Counter[str] = Counter()
    caused: set[str] = set()
    last = 0
    count = 0
    for position, kind, stream_id, version, _event, request in notes:
        count += 1
        found.check(position > last, f"{where}: log position {position} after {last}")
        last = position
        versions[(kind, stream_id)].append(version)
        if kind == "request":
            requests[request] += 1
        elif kind in ("round", "table") and request:
            caused.add(request)
    for (kind, stream_id), seen in versions.items():
        found.check(contiguous(seen), f"{where}: {kind} {stream_id} versions {_short(seen)} are not 1..n")
    twice = sorted(r for r, n in requests.items() if n > 1)
    found.check(not twice, f"{where}: request ids recorded more than once: {twice[:5]}")
    missing = sorted(acked - set(requests))
    found.check(not missing, f"{where}: {len(missing)} acknowledged requests not recorded: {missing[:5]}")
    orphans = sorted(caused - set(requests))
    found.check(not orphans, f"{where}: events caused by unrecorded requests: {orphans[:5]}")
    found.counts[f"{where} events"] = count
    found.counts[f"{where} requests"] = len(requests)
    found.counts[f"{where} streams"] = len(versions)
    return count, requests


def _short(values: Sequence[int]) -> str:
    return str(list(values)) if len(values) <= 12 else f"[{values[0]}..{values[-1]}] ({len(values)} values)"


def check_statement(
    found: Findings,
    wallet: str,
    balance: int,
    reserved: int,
    lines: Sequence[tuple[str, int, int, int, str, str]],
    rounds: Mapping[str, RoundFacts],
    ledger: Mapping[str, tuple[str, int]],
    where: str,
) -> None:
    """Statement lines: (kind, amount, reserved change, balance after, round id, reference)."""
    found.check(reserved == 0, f"{where}: wallet {wallet} still reserves {reserved}")
    running = 0
    for kind, amount, _change, after, round_id, _ref in lines:
        running += amount
        if running != after:
            found.bad(f"{where}: wallet {wallet}: {kind} {round_id} leaves {after}, the lines sum to {running}")
            break
    found.check(running == balance, f"{where}: wallet {wallet}: balance {balance} but its statement sums to {running}")
    per_round: dict[str, list[tuple[str, int, int]]] = defaultdict(list)
    moves: Counter[tuple[str, int]] = Counter()
    for kind, amount, change, _after, round_id, reference in lines:
        if round_id:
            per_round[round_id].append((kind, amount, change))
        elif kind in ("Deposited", "Withdrawn"):
            moves[(reference, amount)] += 1
    for round_id, entries in per_round.items():
        kinds = Counter(k for k, _a, _c in entries)
        paid_times = kinds["RoundSettled"]
        found.check(paid_times <= 1, f"{where}: wallet {wallet} paid {paid_times} times in {round_id}")
        closing = sum(kinds[k] for k in CLOSING)
        found.check(closing == 1, f"{where}: wallet {wallet}: {round_id} closed {closing} times ({dict(kinds)})")
        found.check(sum(c for _k, _a, c in entries) == 0, f"{where}: wallet {wallet}: {round_id} reservations net != 0")
        facts = rounds.get(round_id)
        if facts is None:
            found.bad(f"{where}: wallet {wallet} has lines for unknown round {round_id}")
            continue
        paid = sum(a for k, a, _c in entries if k == "RoundSettled")
        expected = facts.nets.get(wallet, 0) if facts.outcome == "settled" else 0
        found.check(paid == expected, f"{where}: wallet {wallet}: {round_id} paid {paid}, the round says {expected}")
        found.counts[f"{where} wallet-rounds"] += 1
    twice = [m for m, n in moves.items() if n > 1]
    found.check(not twice, f"{where}: wallet {wallet}: deposits/withdrawals recorded twice: {twice[:3]}")
    acknowledged = Counter({(rid, amount): 1 for rid, (w, amount) in ledger.items() if w == wallet})
    found.check(
        moves == acknowledged,
        f"{where}: wallet {wallet}: deposits/withdrawals {sorted(moves - acknowledged)[:3]} not acknowledged, "
        f"{sorted(acknowledged - moves)[:3]} acknowledged but not recorded",
    )


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
                found.counts["rounds"] += 1
                sequences = [e.sequence for e in r.events]
                found.check(
                    bool(sequences) and contiguous(sequences, sequences[0]) and sequences[-1] == r.version,
                    f"{where}: round {round_id} events {_short(sequences)} are not contiguous up to {r.version}",
                )
                if r.phase != pb.ROUND_PHASE_CLOSED:
                    found.bad(f"{where}: round {round_id} is {pb.RoundPhase.Name(r.phase)}, not closed")
                    continue
                nets = {res.player: res.net for res in r.results}
                outcome = pb.RoundOutcome.Name(r.outcome).removeprefix("ROUND_OUTCOME_").lower()  # "settled", ...
                rounds[round_id] = RoundFacts(outcome, nets)
                found.counts[outcome if r.outcome else "no outcome"] += 1
                closed.append(round_id)
                if r.outcome == pb.ROUND_OUTCOME_SETTLED:
                    total = sum(nets.values()) + r.house_net + r.commission
                    found.check(total == 0, f"{where}: round {round_id} does not balance: {total}")
                elif r.outcome == pb.ROUND_OUTCOME_VOIDED:
                    found.check(not any(nets.values()), f"{where}: voided round {round_id} moved money {nets}")
                else:
                    found.bad(f"{where}: round {round_id} closed with outcome {pb.RoundOutcome.Name(r.outcome)}")

        def verify(round_id: str) -> tuple[str, bool, str]:
            verdict = auditor.send("AuditService", "VerifyRound", round_id=round_id)
            return round_id, verdict.ok, verdict.first_difference

        with ThreadPoolExecutor(max_workers=verify_workers) as pool:
            for round_id, ok, difference in pool.map(verify, closed):
                found.counts["verified"] += ok
                found.check(ok, f"{where}: round {round_id} does not verify: {difference}")

        total = 0
        for wallet_id in wallets:
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
            total += wallet.balance
        net_in = sum(amount for _w, amount in ledger.values())
        found.check(
            total + house == net_in,
            f"{where}: money does not balance: wallets {total} + house and commission {house} != deposits {net_in}",
        )
        found.counts["wallets"] = len(wallets)

        def log() -> Iterable[tuple[int, str, str, int, str, str]]:
            after = 0
            for _ in range(1_000_000):
                batches = auditor.stubs["EventService"].SubscribeEvents(
                    pb.SubscribeEventsRequest(
                        after_position=after, batch_size=1000, stop_at_head=True, partition=partition
                    ),
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

        entries = list(log())
        check_log(found, entries, acked, where)
        if feed is not None:
            received = list(feed)
            logged = [(p, kind, ident, version) for p, kind, ident, version, _e, _r in entries]
            if received != logged:
                diverge = next((i for i, (a, b) in enumerate(zip(received, logged, strict=False)) if a != b), None)
                found.bad(
                    f"{where}: the event feed, resumed across kills, delivered {len(received)} events, the log has "
                    f"{len(logged)}; first difference at index {diverge}"
                )
            found.counts["feed events"] = len(received)

        # the round index (read models) behind ListRounds: every closed round once, newest first
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
    finally:
        client.close()
    return found


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
                    f"{where}: round {round_id} events {_short(positions)} are not contiguous",
                )
                if view.phase != "closed":
                    found.bad(f"{where}: round {round_id} is {view.phase}, not closed")
                    continue
                closed.append(round_id)
                rounds[round_id] = RoundFacts(view.outcome or "", _nets(view))
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
        net_in = sum(amount for _w, amount in ledger.values())
        found.check(
            total + house == net_in,
            f"{where}: money does not balance: wallets {total} + house and commission {house} != deposits {net_in}",
        )

        def log() -> Iterable[tuple[int, str, str, int, str, str]]:
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

        check_log(found, log(), acked, where)
        _check_read_models(found, store, app, tables, wallets)
    finally:
        app.close()
    return found


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


def findings_lines(
    unexpected: Sequence[str],
    server_errors: Sequence[str],
    problems: Sequence[tuple[str, Sequence[str]]],
    ok: bool,
    notes: Sequence[str] = (),
) -> list[str]:
    """The end of a harness report: the clients' unexpected errors, the servers' logged errors, each
    titled list of problems (the first 30 of each), ``notes``, and "all checks passed" when ``ok``."""
    lines = []
    if unexpected:
        lines.append(f"  UNEXPECTED client errors ({len(unexpected)}): {list(unexpected[:10])}")
    if server_errors:
        lines.append(f"  server log errors ({len(server_errors)}): {list(server_errors[:5])}")
    for title, found in problems:
        if found:
            lines.append(f"  {title} ({len(found)}):")
            lines.extend(f"    - {p}" for p in found[:30])
    lines.extend(notes)
    if ok:
        lines.append("  all checks passed")
    return lines


def finish(report: Any, json_path: str | None) -> int:
    """A harness command's last step: print the report, write it as JSON (with ``ok``) if asked; the exit code."""
    print(report.render())
    if json_path:
        Path(json_path).write_text(json.dumps({**asdict(report), "ok": report.ok}, indent=2), encoding="utf-8")
    return 0 if report.ok else 1
