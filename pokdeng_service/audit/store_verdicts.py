"""The verdicts of a whole-store verification: rounds, tables, wallets, seeds, requests (``audit.store``)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError

from pokdeng_core import events as re
from pokdeng_core.currencies import currency_of
from pokdeng_core.shuffle import commitment
from pokdeng_service.application.partitions import partition_of, table_of_round
from pokdeng_service.audit.store_streams import (
    RoundRead,
    SnapshotPages,
    StreamRead,
    TableRead,
    WalletRead,
    where,
)
from pokdeng_service.audit.verdicts import Verdict
from pokdeng_service.money import format_money
from pokdeng_service.store import aggregates as ag
from pokdeng_service.store.facts import RecordedEvent
from pokdeng_service.store.layout import LAYOUT_UUID, StoreLayout, layout_problem


class StoreVerdicts:
    """The verdicts of a whole-store verification, from what ``audit.store`` read of every stream."""

    app: Any
    vault: Any
    snapshot_store: Any
    streams: dict[UUID, StreamRead]
    rounds: dict[str, RoundRead]
    tables: dict[str, TableRead]
    wallets: dict[str, WalletRead]
    seeds: dict[str, tuple[StreamRead, RecordedEvent]]
    request_problems: list[str]
    requests: int
    others: dict[str, int]
    unknown: list[str]
    topics: dict[str, tuple[str, bool] | None]
    rows: int
    runs: dict[UUID, tuple[str, int]]
    platform: Any  # ``audit.outbox.PlatformAudit``: the rounds whose money a platform's wallet holds
    partition: int = 0  # the store's place in its deployment: partition ``partition`` of ``partitions``
    partitions: int = 1

    def _round_verdict(self, record: RoundRead) -> Verdict:
        """The round's verdict once its stream is read: rows, chain, replay and money, completeness."""
        verdict = record.verdict = Verdict(f"round {record.ident or record.uuid}")
        last = record.last.position if record.last is not None else 0
        verdict.add("stream", "stream" not in record.problems, record.problems.get("stream", f"positions 1 to {last}"))
        linked = f"{max(last - 1, 0)} events linked"
        verdict.add("chain", "chain" not in record.problems, record.problems.get("chain", linked))
        verdict.checks.extend(record.replayed)
        if "complete" in record.problems:
            verdict.add("complete", False, record.problems["complete"])
        return verdict

    def _summarise(self, record: RoundRead) -> None:
        """What the round's own events say of its table, wallets and seed."""
        reserved: dict[str, int] = {}
        for fact in record.facts:
            data = fact.data
            try:
                if fact.kind == re.RoundOpened.kind:
                    record.round_no = data["round_no"]
                    record.currency = currency_of(data)
                    record.banker = data["banker_player"]
                    if data["table_id"] != record.table_id or data["round_id"] != record.ident:
                        record.fail("stream", fact.position, "its opening names another round or table")
                elif fact.kind == re.ShuffleCommitted.kind:
                    record.commitment = data["commitment"]
                elif fact.kind == re.BetPlaced.kind:
                    reserved[data["player"]] = reserved.get(data["player"], 0) + data["reserved"]
                    if data.get("banker_reserved") and record.banker:
                        reserved[record.banker] = reserved.get(record.banker, 0) + data["banker_reserved"]
                elif fact.kind == re.SideBetPlaced.kind:
                    reserved[data["player"]] = reserved.get(data["player"], 0) + data["reserved"]
                elif fact.kind == re.RoundSettled.kind:
                    reserved = {player: held for player, held, _net in data["wallets"]}
                    record.nets = {player: net for player, _held, net in data["wallets"]}
                    record.house_net, record.commission = data["house_net"], data["commission"]
                elif fact.kind == re.RoundVoided.kind:
                    reserved = {player: held for player, held in data["wallets"]}
                elif fact.kind == re.RoundClosed.kind:
                    record.outcome = data["outcome"]
            except (KeyError, TypeError, ValueError) as error:
                record.fail("stream", fact.position, f"is malformed: {error!r}", fact.kind)
        record.reserved = reserved
        record.last_digest = record.last.digest if record.last is not None else ""

    # -- the end: streams against each other -----------------------------------------------

    def verdicts(self) -> list[Verdict]:
        out: list[Verdict] = []
        round_verdicts = self._rounds_against_tables()
        out.extend(round_verdicts)
        out.extend(self._table_verdicts())
        out.extend(self.platform.verdicts(self))  # (before the wallets': it takes its rounds off them)
        out.extend(self._wallet_verdicts())
        out.extend(self._unidentified_verdicts())
        out.append(self._seed_verdict())
        out.append(self._request_verdict())
        out.append(self._store_verdict())
        return out

    def _rounds_against_tables(self) -> list[Verdict]:
        started: dict[str, tuple[TableRead, int]] = {}
        for table in self.tables.values():
            for round_id, position in table.started:
                if round_id in started:
                    table.fail("rounds", position, f"round_started of round {round_id}, started before")
                started.setdefault(round_id, (table, position))
        out: list[Verdict] = []
        for round_id, record in self.rounds.items():
            verdict = self._open_round(record) if record.closed is None else self._round_verdict(record)
            start = started.pop(round_id, None)
            if start is None:
                verdict.add("table record", False, f"position 1: table {record.table_id} never started it")
            elif start[0].ident != record.table_id:
                verdict.add("table record", False, f"position 1: table {start[0].ident} started it, not its own")
            elif not verdict.ok:
                table, position = start
                table.fail("rounds", position, f"round_started of round {round_id}, whose stream fails verification")
            out.append(verdict)
        for round_id, (table, position) in started.items():
            verdict = Verdict(f"round {round_id}")
            verdict.add(
                "stream",
                False,
                f"position 1: missing: table {table.ident} started it at position {position}, "
                "and the store holds no row of it",
            )
            table.fail("rounds", position, f"round_started of round {round_id}, whose stream is missing")
            out.append(verdict)
        self._pins()
        return out

    def _open_round(self, record: RoundRead) -> Verdict:
        verdict = self._round_verdict(record)
        self._summarise(record)
        record.facts = []
        table = self.tables.get(record.table_id)
        last = record.last
        end = f"the stream ends at position {last.position} {where(last)}" if last is not None else "it is empty"
        if table is not None and table.state.round_id == record.ident:
            verdict.subject += " (open)"
            verdict.add("open", True, f"the current round of table {table.ident}; {end}")
        else:
            position = last.position + 1 if last is not None else 1
            verdict.add("complete", False, f"position {position}: missing: {end} without round_closed")
        return verdict

    def _pins(self) -> None:
        """Each table's round_finished against its round's own record; the house ledger."""
        by_table: dict[str, list[RoundRead]] = {}
        for each in self.rounds.values():
            by_table.setdefault(each.table_id, []).append(each)
        for table in self.tables.values():
            house = commission = 0
            pinned: set[str] = set()
            for round_id, position, data in table.finished:
                record = self.rounds.get(round_id)
                where = f"position {position} (round_finished of round {round_id})"
                if round_id in pinned:
                    table.fail("rounds", position, f"round_finished of round {round_id}, finished before")
                    continue
                pinned.add(round_id)
                if record is None or record.verdict is None:
                    table.fail("rounds", position, f"round_finished of round {round_id}, whose stream is missing")
                    continue
                booked = (data.get("round_digest"), data.get("outcome"), data.get("house_net"), data.get("commission"))
                own = (record.last_digest, record.outcome, record.house_net, record.commission)
                if record.closed is None:
                    detail = f"table {table.ident} {where} finished it, but its stream has no round_closed"
                    record.verdict.add("table record", False, detail)
                    table.fail("rounds", position, f"round_finished of round {round_id}, which is not complete")
                elif booked != own:
                    names = ("last digest", "outcome", "house_net", "commission")
                    first = next(n for n, a, b in zip(names, booked, own, strict=True) if a != b)
                    record.verdict.add("table record", False, f"table {table.ident} {where}: its {first} differs")
                    table.fail(
                        "rounds", position, f"round_finished of round {round_id}: its {first} is not the round's"
                    )
                else:
                    record.verdict.add("table record", True, f"table {table.ident} pins the round's last digest")
                house += record.house_net
                commission += record.commission
            for record in by_table.get(table.ident, ()):
                if record.closed is not None and record.ident not in pinned:
                    assert record.verdict is not None
                    record.verdict.add("table record", False, f"table {table.ident} has no round_finished of it")
            books = (table.state.house_net, table.state.commission)
            if books != (house, commission):
                table.fail(
                    "house ledger",
                    table.last.position if table.last is not None else 1,
                    f"the table books house_net {books[0]} and commission {books[1]}; "
                    f"its rounds' settlements {house} and {commission}",
                )
            table.ledger = f"house_net {house}, commission {commission} over {len(pinned)} rounds"

    def _table_verdicts(self) -> list[Verdict]:
        out = []
        for table in self.tables.values():
            _beyond(table, table.snapshots)
            verdict = Verdict(f"table {table.ident}")
            last = table.last.position if table.last is not None else 0
            notes = {
                "stream": f"positions 1 to {last}",
                "chain": f"{max(last - 1, 0)} events linked",
                "rounds": f"{len(table.started)} rounds started, {len(table.finished)} finished, as their streams say",
                "house ledger": table.ledger,
                "snapshots": _snapshot_note(table.snapshots),
            }
            _fill(verdict, table, notes)
            out.append(verdict)
        return out

    def _wallet_verdicts(self) -> list[Verdict]:
        played: dict[str, dict[str, RoundRead]] = {}
        for record in self.rounds.values():
            for player in record.reserved.keys() | record.nets.keys():
                played.setdefault(player, {})[record.ident] = record
        out = []
        for wallet_id, wallet in self.wallets.items():
            _beyond(wallet, wallet.snapshots)
            rounds = played.pop(wallet_id, {})
            nets = self._wallet_rounds(wallet, rounds)
            expected = wallet.deposits - wallet.withdrawals + nets
            last = wallet.last.position if wallet.last is not None else 1
            money = _money_of(wallet.currency)
            sums = (
                f"deposits {money(wallet.deposits)} - withdrawals {money(wallet.withdrawals)} "
                f"+ the nets of its rounds {money(nets)}"
            )
            if wallet.balance != expected:
                wallet.fail("balance", last, f"the events fold to {money(wallet.balance)}; {sums} = {money(expected)}")
            elif wallet.balance < sum(wallet.reservations.values()) or wallet.balance < 0:
                held = {round_id: money(amount) for round_id, amount in wallet.reservations.items()}
                wallet.fail("balance", last, f"it holds {money(wallet.balance)} and reserves {held}")
            verdict = Verdict(f"wallet {wallet_id}")
            chain = f"{max(last - 1, 0)} events linked"
            if wallet.unchained and "chain" not in wallet.problems:
                first, upto, count = wallet.unchained
                wallet.fail(
                    "chain",
                    first,
                    f"unchained: positions {first} to {upto} ({count} events) carry no digest "
                    "(written before wallets were chained)",
                )
            notes = {
                "stream": f"positions 1 to {last}",
                "chain": chain,
                "snapshots": _snapshot_note(wallet.snapshots),
                "rounds": f"{len(rounds)} rounds: reservations, releases and nets as the rounds say",
                "balance": f"{money(wallet.balance)} = {sums}",
            }
            _fill(verdict, wallet, notes)
            out.append(verdict)
        for player, rounds in played.items():  # rounds name a wallet the store does not hold
            for record in rounds.values():
                assert record.verdict is not None
                record.verdict.add(f"wallet {player}", False, f"the round names wallet {player}, which the store lacks")
        return out

    def _wallet_rounds(self, wallet: WalletRead, rounds: dict[str, RoundRead]) -> int:
        """The wallet's record of each round against the round's own; returns the nets of its rounds."""
        nets, money = 0, _money_of(wallet.currency)
        for round_id, (held, reserve_at, closing, released, net, closed_at, _n) in wallet.rounds.items():
            record = rounds.get(round_id)
            at = closed_at or reserve_at
            if record is None:
                what = "which the store does not hold" if round_id not in self.rounds else "which names no stake of it"
                wallet.fail("rounds", reserve_at, f"it reserved for or settled round {round_id}, {what}")
                continue
            want = record.reserved.get(wallet.ident, 0)
            problem = ""
            if held != want:
                problem = f"it reserved {money(held)} for round {round_id}; the round {money(want)}"
            elif record.closed is None:
                if closing:
                    problem = f"it closed round {round_id}, whose stream has no round_closed"
            elif record.outcome == "voided":
                if closing != "ReservationReleased" or released != want:
                    problem = f"round {round_id} was voided: {money(want)} is released, not {closing or 'nothing'}"
            elif closing != "RoundSettled" or released != want or net != record.nets.get(wallet.ident, 0):
                problem = (
                    f"round {round_id} releases {money(want)} and pays {money(record.nets.get(wallet.ident, 0))}; "
                    f"the wallet applied {closing or 'nothing'} ({money(released)}, {money(net)})"
                )
            if problem:
                wallet.fail("rounds", at, problem)
            if record.verdict is not None and record.closed is not None:
                if problem:
                    detail = f"position {at} of wallet {wallet.ident}: {problem}"
                    record.verdict.add(f"wallet {wallet.ident}", False, detail)
                else:
                    said = money(record.nets.get(wallet.ident, 0), signed=True)
                    applied = f"wallet applied {money(net, signed=True)}, round says {said}"
                    record.verdict.add(f"wallet {wallet.ident}", True, applied)
        for round_id, record in rounds.items():
            if round_id not in wallet.rounds:
                detail = f"round {round_id} reserves or pays {wallet.ident}, and the wallet holds no entry of it"
                wallet.fail("rounds", wallet.last.position if wallet.last else 1, detail)
                if record.verdict is not None:
                    record.verdict.add(f"wallet {wallet.ident}", False, detail)
            if record.closed is not None and record.outcome != "voided":
                nets += record.nets.get(wallet.ident, 0)
        for round_id in wallet.reservations:
            record = rounds.get(round_id)
            if record is not None and record.closed is not None:
                at = wallet.rounds[round_id][1]
                wallet.fail("rounds", at, f"it still reserves funds for round {round_id}, which is closed")
        return nets

    def _unidentified_verdicts(self) -> list[Verdict]:
        """Round, table and wallet streams that name no id of theirs (a forged or beheaded stream)."""
        out = []
        for stream in self.streams.values():
            if stream.kind in ("round", "table", "wallet") and not stream.ident:
                verdict = Verdict(stream.label)
                problem = stream.problems.get("stream", "position 1: the stream has no creation row")
                verdict.add("stream", False, problem)
                if "chain" in stream.problems:
                    verdict.add("chain", False, stream.problems["chain"])
                out.append(verdict)
        return out

    def _seed_verdict(self) -> Verdict:
        verdict = Verdict("sealed seeds")
        problems: list[str] = []
        sealed: list[str] = []  # open rounds' seeds that do not open to their commitment
        opened = unopened = 0
        for stream in self.streams.values():
            if stream.kind == "seed" and stream.problems:
                check = next(iter(stream.problems))
                problems.append(f"seed of round {stream.ident or stream.uuid} {stream.problems[check]}")
            elif stream.kind == "seed" and stream.rows != 1:
                problems.append(f"seed of round {stream.ident} position 2: more rows than its creation")
        missing = [r for r in self.rounds.values() if r.ident not in self.seeds]
        for record in missing:
            problems.append(f"round {record.ident} position 1: it has no sealed seed stream")
        for round_id, (stream, fact) in self.seeds.items():
            found = self.rounds.get(round_id)
            if found is None:
                if stream.rows == 1 and not stream.problems:
                    problems.append(f"seed of round {round_id} position 1: the store holds no round {round_id}")
                continue
            seed = self._open_seed(round_id, fact) if found.closed is None else b""
            if seed == b"":
                continue  # a closed round's seed is revealed in its record (the replay checks it)
            if seed is None:
                unopened += 1
                continue
            if isinstance(seed, str):
                problem = f"seed of round {round_id} position 1: {seed}"
            elif commitment(seed) != found.commitment:
                problem = f"seed of round {round_id} position 1: it opens to a seed the round is not committed to"
            else:
                opened += 1
                continue
            sealed.append(problem)
            if found.verdict is not None:
                found.verdict.add("seed", False, problem)
        verdict.add(
            "streams",
            not problems,
            problems[0] if problems else f"{len(self.seeds)} seeds, each one creation row of a round the store holds",
        )
        note = f"the seeds of {opened} open round(s) open to their commitments"
        note = f"{note}; {unopened} not opened (no vault key here)" if unopened else note
        verdict.add("open rounds", not sealed, sealed[0] if sealed else note)
        return verdict

    def _open_seed(self, round_id: str, fact: RecordedEvent) -> bytes | str | None:
        """The seed of an open round's sealed seed (bytes), what is wrong with it (text), or None without
        its key here (the key is read only now: an audit of closed rounds needs none)."""
        vault = self.vault
        data = fact.data
        try:
            key_id = getattr(vault, "key_id", None)
        except Exception:  # a deferred key that is not to be had
            return None
        if vault is None or data.get("key_id") != key_id:
            return None
        try:
            seed: bytes = vault.open(
                data["nonce"], data["sealed"], round_id, ag.round_uuid(round_id), int(data.get("aad_version", 1))
            )
        except Exception:
            return "it does not open under the vault key it names"
        return seed

    def _request_verdict(self) -> Verdict:
        verdict = Verdict("command records")
        problems = list(self.request_problems)
        for stream in self.streams.values():
            if stream.kind == "request" and stream.problems:
                check = next(iter(stream.problems))
                problems.insert(0, f"request {stream.ident or stream.uuid} {stream.problems[check]}")
        verdict.add(
            "records",
            not problems,
            problems[0]
            if problems
            else f"{self.requests} records, each one creation row naming what its request wrote",
        )
        return verdict

    def _layout(self) -> tuple[bool, str]:
        """The store's recorded layout is the one it was given, and every round, table and wallet stream lives
        in the partition its key names (a round by its table's)."""
        try:
            recorded: StoreLayout | None = self.app.repository.get(LAYOUT_UUID)
        except AggregateNotFoundError:
            recorded = None
        except Exception as error:  # (a layout row that cannot be read: what the store says is unknown)
            return False, f"the store's layout record cannot be read: {error}"
        problem = layout_problem(recorded, self.partitions, self.partition)
        if problem is not None:
            return False, problem
        places = (
            *(("round", r, table_of_round(r)) for r in self.rounds),
            *(("table", t, t) for t in self.tables),
            *(("wallet", w, w) for w in self.wallets),
        )
        for kind, ident, key in places:
            misplaced = _misplaced(kind, ident, key, self.partition, self.partitions)
            if misplaced is not None:
                return False, misplaced
        said = "recorded" if recorded is not None else "not recorded (a store made before layouts were)"
        where = f"partition {self.partition} of {self.partitions}"
        return True, f"{where}, {said}; every round, table and wallet stream in the partition its key names"

    def _store_verdict(self) -> Verdict:
        verdict = Verdict("store")
        counts: dict[str, int] = {}
        for stream in self.streams.values():
            counts[stream.kind] = counts.get(stream.kind, 0) + 1
        summary = ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items()))
        verdict.add("log", not self.unknown, self.unknown[0] if self.unknown else f"{self.rows} rows: {summary}")
        lacking = [
            f"{stream.label} position {stream.undigested}: no digest"
            for stream in self.streams.values()
            if stream.undigested
        ]
        verdict.add(
            "digests",
            not lacking,
            lacking[0] if lacking else "every row after its stream's creation carries a digest",
        )
        verdict.add("layout", *self._layout())
        if self.others:
            others = ", ".join(f"{n} rows of {kind}" for kind, n in sorted(self.others.items()))
            verdict.add("other streams", True, f"{others}: not verified here")
        return verdict


def _misplaced(kind: str, ident: str, key: str, partition: int, partitions: int) -> str | None:
    home = partition_of(key, partitions)
    if home == partition:
        return None
    return f"{kind} {ident!r} lives in partition {partition}; its key {key!r} names partition {home} of {partitions}"


def _beyond(stream: StreamRead, snapshots: SnapshotPages | None) -> None:
    """Snapshots left once the stream is read are of versions it does not reach."""
    if snapshots is None:
        return
    last = stream.last.position if stream.last is not None else 0
    for snapshot in snapshots.due(2**62):
        version = snapshot.originator_version
        stream.fail("snapshots", version, f"the snapshot at version {version} is beyond the stream's end ({last})")


def _snapshot_note(snapshots: SnapshotPages | None) -> str:
    if snapshots is None:
        return "no snapshot store"
    if not snapshots.checked:
        return "no snapshot"
    return f"{snapshots.checked} snapshot(s), each the fold of the events it summarises"


def _fill(verdict: Verdict, stream: StreamRead, notes: dict[str, str]) -> None:
    """The stream's checks in order: each fails with its first problem, or passes with its note."""
    for name, note in notes.items():
        problem = stream.problems.get(name)
        verdict.add(name, problem is None, problem if problem is not None else note)


def _money_of(currency: str) -> Callable[..., str]:
    """The amounts of one currency as a person reads them (``format_money``: ``THB 9,867.63``)."""
    return functools.partial(format_money, currency=currency)
