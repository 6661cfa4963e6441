"""Crash test: a worker process playing rounds is SIGKILLed at random points, restarted, and checked.

The worker (tests/service/crash_worker.py) plays a fixed plan of rounds on every profile with
request ids fixed by the plan, so a restarted worker resumes by retrying the same ids. The
parent kills it (SIGKILL) several times: at a random moment a little after it finished a
round (so mid-way through the next one, inside or between transactions), and from inside an
event-store transaction after its rows were written and before the commit. After every kill
the store is checked as a fresh process sees it:

* every table's current round is open and resumable (the operator could void it);
  every other round is closed;
* every wallet's reservations are exactly those of the open rounds' stakes;
* all money is accounted for: balances + house + commission == what was deposited.

After the last (uninterrupted) run, which completes the plan:

* every round is closed (settled, or voided by the plan); a round interrupted mid-way kept its
  events and went on from the seat that was to act, with cards from its committed shoe;
* every wallet's balance change, plus the tables' house_net and commission, is zero in sum;
  each wallet's change is the sum of its nets over the rounds it played;
* no event was written twice: each round stream is 1..n without gaps, each request id has one
  CommandRecord, each command's events form one block, each reservation is released once;
* each wallet's balance is the sum of its statement lines.

``POKDENG_CRASH_KILLS`` (default 6) and ``POKDENG_CRASH_ROUNDS`` (default 32) make a longer run; ``--long``
makes 30 kills over 128 rounds.
"""

from __future__ import annotations

import json
import os
import queue
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from pokdeng_core.round_state import Phase
from pokdeng_service.application import PokdengApp
from pokdeng_service.application.views import RecordedEvent
from pokdeng_service.store import aggregates as ag
from tests.needs import long_run

from . import crash_worker as plan
from . import play

pytestmark = [pytest.mark.reliability, pytest.mark.each_store]  # (a crash of the store's own writes: PostgreSQL too)

ROOT = Path(__file__).resolve().parents[2]
KILLS = int(os.environ.get("POKDENG_CRASH_KILLS", "30" if long_run() else "6"))
ROUNDS = int(os.environ.get("POKDENG_CRASH_ROUNDS", "128" if long_run() else "32"))
RUN_TIMEOUT = 300.0  # a hang guard for one run of the worker (a loaded machine plays slowly)


@dataclass
class CrashPoint:
    """An unfinished round as a fresh process found it after a kill."""

    round_id: str
    version: int
    phase: str
    turn: int | None
    events: tuple[RecordedEvent, ...]
    voided: bool = False  # the operator voided it after the crash


@dataclass
class Run:
    proc: subprocess.Popen[str]
    lines: queue.Queue[str | None] = field(default_factory=queue.Queue)
    seen: list[str] = field(default_factory=list)

    def next_line(self, deadline: float) -> str | None:
        """The worker's next output line, or None when it has exited (or the deadline passed)."""
        try:
            line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            return None
        if line is not None:
            self.seen.append(line)
        return line


def _spawn(env: dict[str, str], extra: dict[str, str]) -> Run:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.service.crash_worker"],
        cwd=ROOT,
        env={
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "POKDENG_CRASH_ENV": json.dumps(env),
            "POKDENG_CRASH_ROUNDS": str(ROUNDS),
            **extra,
        },
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    run = Run(proc)

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            run.lines.put(line.strip())
        run.lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    return run


@dataclass
class Progress:
    """How far the plan got over all runs, and how long a round takes."""

    last_round: int = -1
    durations: list[float] = field(default_factory=list)

    def round_time(self) -> float:
        if not self.durations:
            return 0.05
        ordered = sorted(self.durations)
        return ordered[len(ordered) // 2]


def _finish(run: Run, progress: Progress | None = None) -> tuple[int, str]:
    """Wait for the worker to end; note the rounds it closed in ``progress``."""
    try:
        rc = run.proc.wait(timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        run.proc.kill()
        run.proc.wait()
        pytest.fail("the crash worker hung")
    while run.next_line(time.monotonic() + 5) is not None:
        pass
    if progress is not None:
        for line in run.seen:
            if line.startswith("round "):
                progress.last_round = max(progress.last_round, int(line.split()[1]))
    assert run.proc.stderr is not None
    return rc, run.proc.stderr.read()


def _kill_after_progress(run: Run, rng: random.Random, progress: Progress) -> int:
    """Let the worker close 1-3 rounds it had not played before, then SIGKILL it at a random
    instant within about one more round's time (so anywhere in the next round)."""
    deadline = time.monotonic() + RUN_TIMEOUT
    target = progress.last_round + rng.randint(1, 3)
    previous = None
    while (line := run.next_line(deadline)) is not None:
        if line == "done":
            break
        if not line.startswith("round "):
            continue
        k = int(line.split()[1])
        now = time.monotonic()
        if k > progress.last_round:
            if previous is not None:
                progress.durations.append(now - previous)
            progress.last_round = k
        previous = now
        if k >= target:
            time.sleep(rng.uniform(0.0, 1.2 * progress.round_time()))
            break
    if run.proc.poll() is None:
        run.proc.send_signal(signal.SIGKILL)
    rc, err = _finish(run, progress)
    assert rc in (0, -signal.SIGKILL), err
    return rc


def _kill_after_deal(env: dict[str, str], rng: random.Random, progress: Progress, extra: int) -> int:
    """Run the worker and have it SIGKILL itself ``extra`` requests after the deal of a coming round."""
    k = progress.last_round + rng.randint(2, 3)  # not the round a kill may have left open
    while plan.calls_through_deal(k) is None:
        k += 1
    through_deal = plan.calls_through_deal(k)
    assert through_deal is not None
    rc, err = _finish(_spawn(env, {"POKDENG_CRASH_AFTER": f"{k}:{through_deal + extra}"}), progress)
    assert rc in (0, -signal.SIGKILL), err
    return rc


def _all_notifications(app: PokdengApp) -> list[Any]:
    out: list[Any] = []
    while True:
        page = app.read_notifications(after=out[-1].position if out else 0, limit=10_000)
        if not page:
            return out
        out.extend(page)


def _rounds(app: PokdengApp) -> dict[str, list[str]]:
    """Every round of every table, by table."""
    out = {}
    for table_id, *_ in plan.TABLES:
        table = app.get_table(table_id)
        out[table_id] = [f"{table_id}#{n}" for n in range(1, table.round_no + 1)]
    return out


def _expected_reservations(app: PokdengApp, open_rounds: list[str]) -> dict[str, dict[str, int]]:
    expected: dict[str, dict[str, int]] = defaultdict(dict)
    for round_id in open_rounds:
        state = app.round_state(round_id)
        for wallet, amount in state.reserved:
            expected[wallet][round_id] = amount
        if state.banker_player is not None and state.banker_reserved:
            banker = expected[state.banker_player]
            banker[round_id] = banker.get(round_id, 0) + state.banker_reserved
    return expected


def _money_in_store(app: PokdengApp) -> int:
    wallets = sum(app.get_wallet(w).balance for w in plan.WALLETS)
    house = sum(app.get_table(t).house_net + app.get_table(t).commission for t, *_ in plan.TABLES)
    return wallets + house


def _check_crash_point(env: dict[str, str], void: bool = False) -> list[CrashPoint]:
    """What a fresh process finds after a kill: consistent, resumable, nothing lost.

    ``void``: the operator then voids the interrupted rounds instead of letting them resume.
    """
    app = play.make_app(env)
    try:
        try:
            app.get_table("rm")
        except Exception:  # killed during setup: nothing to check yet but the money
            for wallet in plan.WALLETS:
                try:
                    view = app.get_wallet(wallet)
                except Exception:
                    continue
                assert view.reserved == 0 and view.balance in (0, plan.FUNDS)
            return []
        points = []
        open_rounds = []
        for table_id, round_ids in _rounds(app).items():
            current = app.get_table(table_id).current_round
            for round_id in round_ids:
                state = app.round_state(round_id)
                if round_id == current:
                    assert state.phase is not Phase.CLOSED
                    assert "void_round" in app.legal_commands(round_id)  # resumable, or voidable
                    open_rounds.append(round_id)
                    opened = app.get_round(round_id)
                    points.append(CrashPoint(round_id, opened.version, opened.phase, opened.turn, opened.events))
                else:
                    assert state.phase is Phase.CLOSED, (round_id, state.phase)
        expected = _expected_reservations(app, open_rounds)
        for wallet in plan.WALLETS:
            held = {r.round_id: r.amount for r in app.get_wallet(wallet).reservations}
            assert held == expected.get(wallet, {}), (wallet, held, expected.get(wallet))
        assert _money_in_store(app) == plan.FUNDS * len(plan.WALLETS)
        if void:
            for point in points:
                app.void_round(f"operator-void-{point.round_id}", point.round_id, "crash test: operator void")
                assert app.round_state(point.round_id).outcome == "voided"
            for wallet in plan.WALLETS:
                assert app.get_wallet(wallet).reserved == 0
            return [replace(p, voided=True) for p in points]
        return points
    finally:
        app.close()


def _check_final(env: dict[str, str], points: list[CrashPoint]) -> None:
    app = play.make_app(env)
    try:
        rounds = _rounds(app)
        all_rounds = [r for ids in rounds.values() for r in ids]
        assert len(all_rounds) == ROUNDS
        for table_id, *_ in plan.TABLES:
            assert app.get_table(table_id).current_round is None

        # every round closed, its books balanced, its cards from its committed shoe
        nets: Counter[str] = Counter()
        for round_id in all_rounds:
            view = app.get_round(round_id)
            assert view.phase == "closed", round_id
            for player, net in play.assert_round_books(view).items():
                nets[player] += net
            play.assert_cards_from_shoe(view)
            assert [e.position for e in view.events] == list(range(1, len(view.events) + 1))
            blocks = [e.command_id for e in view.events if e.command_id]
            firsts = [c for i, c in enumerate(blocks) if i == 0 or blocks[i - 1] != c]
            assert len(firsts) == len(set(firsts)), f"{round_id}: a command's events were written twice"

        # interrupted rounds went on where they stood
        for point in points:
            view = app.get_round(point.round_id)
            assert view.events[: len(point.events)] == point.events
            after = view.events[len(point.events) :]
            assert after, point.round_id
            if point.voided:
                assert after[0].kind == "round_voided" and after[0].command_id.startswith("operator-void-")
                assert view.outcome == "voided"
            elif point.turn is not None:  # the seat that was to act acts next (or times out)
                nxt = after[0]
                assert nxt.kind == "round_voided" or nxt.data.get("seat") == point.turn, (point, nxt)
            elif point.phase == "banker_turn":  # the banker acts next
                nxt = after[0]
                assert nxt.kind in ("round_voided", "hands_revealed") or nxt.data.get("seat") == 0, (point, nxt)

        # money: every wallet's change is its nets; with the house's books, the sum is zero
        ledger = play.Ledger({w: plan.FUNDS for w in plan.WALLETS}, {t: (0, 0) for t, *_ in plan.TABLES})
        changes, _house, _commission = ledger.assert_balanced(app)
        assert changes == {w: nets.get(w, 0) for w in plan.WALLETS}

        # each request id's CommandRecord once; every recorded command id has its record
        notes = _all_notifications(app)
        requests = Counter(n.data["request_id"] for n in notes if n.stream == "request")
        assert requests and max(requests.values()) == 1
        caused = {n.data.get("command_id") for n in notes if n.stream in ("round", "table")} - {None, ""}
        assert caused <= set(requests)
        for stream, ids in (("round", all_rounds), ("table", list(rounds))):
            for stream_id in ids:
                versions = [n.stream_version for n in notes if n.stream == stream and n.stream_id == stream_id]
                if stream == "table" or versions:
                    assert versions == list(range(1, len(versions) + 1)), (stream, stream_id)

        # the worker snapshotted wallets and tables every few events, kills included: they load as replayed
        plain = play.make_app(env, IS_SNAPSHOTTING_ENABLED="n")
        try:
            assert app.snapshots is not None
            for wallet in plan.WALLETS:
                uuid = ag.wallet_uuid(wallet)
                assert len(list(app.snapshots.get(uuid))) >= 3
                assert app.repository.get(uuid) == plain.repository.get(uuid)
            for table_id, *_ in plan.TABLES:
                uuid = ag.table_uuid(table_id)
                assert app.repository.get(uuid) == plain.repository.get(uuid)
                assert app.get_table(table_id) == plain.get_table(table_id)
        finally:
            plain.close()

        # statements: balance is the sum of the lines; each round's reservation released once
        for wallet in plan.WALLETS:
            total, lines = play.statement_total(app, wallet)
            balance = app.get_wallet(wallet).balance
            assert total == balance == lines[-1].balance_after
            per_round: dict[str, list[Any]] = defaultdict(list)
            for line in lines:
                if line.round_id:
                    per_round[line.round_id].append(line)
            deposits = [line.reference for line in lines if line.kind in ("Deposited", "Withdrawn")]
            assert len(deposits) == len(set(deposits))
            for round_id, round_lines in per_round.items():
                assert sum(line.reserved_change for line in round_lines) == 0, (wallet, round_id)
                closing = [line for line in round_lines if line.kind in ("RoundSettled", "ReservationReleased")]
                assert len(closing) == 1, (wallet, round_id, [line.kind for line in round_lines])
    finally:
        app.close()


def test_killed_worker_resumes_and_nothing_is_lost_or_doubled(app_env: dict[str, str], store: str) -> None:
    rng = random.Random(f"crash-{store}-{os.getpid()}-{time.time_ns()}")
    started = time.monotonic()
    kills = in_txn_kills = 0
    points: list[CrashPoint] = []
    progress = Progress()
    attempt = 0
    while kills < KILLS and attempt < 3 * KILLS:
        attempt += 1
        mode = attempt % 3
        if mode == 0:  # die inside a write transaction, after its inserts, before its commit
            run = _spawn(app_env, {"POKDENG_CRASH_IN_TXN": str(rng.randint(1, 40))})
            rc, err = _finish(run, progress)
            assert rc in (0, -signal.SIGKILL), err
            in_txn_kills += rc == -signal.SIGKILL
        elif mode == 2:  # die between two commands of a round: just after its deal, or a little later
            rc = _kill_after_deal(app_env, rng, progress, extra=rng.choice([0, 0, 1, 2]))
        else:
            rc = _kill_after_progress(_spawn(app_env, {}), rng, progress)
        if rc == 0:
            break  # the plan is complete
        kills += 1
        # once, from the third kill on, the operator voids the interrupted round instead of resuming it
        found = _check_crash_point(app_env, void=kills >= 3 and not any(p.voided for p in points))
        points.extend(found)
    for _ in range(4):  # a round with its cards dealt must have been interrupted at least once
        if any(p.turn is not None for p in points) or kills < KILLS:
            break
        if _kill_after_deal(app_env, rng, progress, extra=0) == 0:
            break
        kills += 1
        points.extend(_check_crash_point(app_env))
    final = _spawn(app_env, {})
    rc, err = _finish(final)
    assert rc == 0, err
    assert final.seen[-1:] == ["done"], final.seen[-3:]
    assert kills >= min(KILLS, 5), f"only {kills} kills landed before the plan completed"
    assert in_txn_kills >= 1
    assert any(p.turn is not None for p in points), (
        f"no kill left a round at a player's turn: {[(p.round_id, p.phase) for p in points]}, "
        f"{kills} kills, plan at round {progress.last_round}"
    )
    _check_final(app_env, points)
    print(f"{store}: {kills} kills ({in_txn_kills} inside a transaction), unfinished rounds found: "
          f"{[(p.round_id, p.phase, p.turn, p.voided) for p in points]}")  # fmt: skip
    elapsed = time.monotonic() - started
    print(f"{store}: crash test took {elapsed:.1f}s")
