"""What the end-of-run audits (``checks``) share: the ``Findings`` they return, the checks of the log and of a
wallet's statement, of the money's balance, and the end of a harness report (``findings_lines``, ``finish``)."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

CLOSING = ("RoundSettled", "ReservationReleased")
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
        found.check(contiguous(seen), f"{where}: {kind} {stream_id} versions {short(seen)} are not 1..n")
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


def short(values: Sequence[int]) -> str:
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


def check_money(found: Findings, total: int, house: int, ledger: Mapping[str, tuple[str, int]], where: str) -> None:
    """The wallets' balances and the house's net and commission sum to the deposits less the withdrawals."""
    net_in = sum(amount for _w, amount in ledger.values())
    found.check(
        total + house == net_in,
        f"{where}: money does not balance: wallets {total} + house and commission {house} != deposits {net_in}",
    )


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
