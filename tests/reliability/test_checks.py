"""The harnesses' checks find what they look for: a lost, doubled or unbalanced record is reported.

(Fed synthetic records; the harness tests feed them real ones.)
"""

from __future__ import annotations

from pokdeng_testkit.harness.findings import Findings, RoundFacts, check_log, check_statement

DEPOSIT = ("setup:w:fund", 10_000)
# kind, amount, reserved change, balance after, round id, reference
GOOD = [
    ("Deposited", 10_000, 0, 10_000, "", "setup:w:fund"),
    ("FundsReserved", 0, 500, 10_000, "t#1", ""),
    ("RoundSettled", 200, -500, 10_200, "t#1", ""),
    ("FundsReserved", 0, 500, 10_200, "t#2", ""),
    ("ReservationReleased", 0, -500, 10_200, "t#2", "round_voided"),
]
ROUNDS = {"t#1": RoundFacts("settled", {"w": 200}), "t#2": RoundFacts("voided", {})}
LEDGER = {DEPOSIT[0]: ("w", DEPOSIT[1])}


def statement_problems(lines: list[tuple[str, int, int, int, str, str]], balance: int = 10_200) -> list[str]:
    found = Findings()
    check_statement(found, "w", balance, 0, lines, ROUNDS, LEDGER, "test")
    return found.problems


def test_a_sound_statement_passes() -> None:
    assert statement_problems(GOOD) == []


def test_a_double_payout_is_found() -> None:
    doubled = [*GOOD[:3], ("RoundSettled", 200, 0, 10_400, "t#1", ""), *GOOD[3:]]
    problems = statement_problems(doubled, balance=10_400)
    assert any("paid 2 times in t#1" in p for p in problems)
    assert any("t#1 paid 400, the round says 200" in p for p in problems)


def test_a_balance_that_is_not_its_statement_is_found() -> None:
    assert any("balance 10300 but its statement sums to 10200" in p for p in statement_problems(GOOD, 10_300))


def test_an_unacknowledged_or_lost_deposit_is_found() -> None:
    extra = [*GOOD, ("Deposited", 50, 0, 10_250, "", "ghost")]
    assert any("not acknowledged" in p and "ghost" in p for p in statement_problems(extra, 10_250))
    lost = GOOD[1:]
    problems = statement_problems([(k, a, c, b - 10_000, r, f) for k, a, c, b, r, f in lost], 200)
    assert any("acknowledged but not recorded" in p and "setup:w:fund" in p for p in problems)


def test_a_round_left_reserved_is_found() -> None:
    unreleased = GOOD[:4]
    assert any("t#2 closed 0 times" in p for p in statement_problems(unreleased))


def log_problems(notes: list[tuple[int, str, str, int, str, str]], acked: set[str]) -> list[str]:
    found = Findings()
    check_log(found, notes, acked, "test")
    return found.problems


LOG = [
    (1, "request", "x", 1, "CommandRecord", "r1"),
    (2, "round", "t#1", 1, "round_opened", "r1"),
    (3, "round", "t#1", 2, "bet_placed", "r2"),
    (4, "request", "y", 1, "CommandRecord", "r2"),
]


def test_a_sound_log_passes() -> None:
    assert log_problems(LOG, {"r1", "r2"}) == []


def test_lost_duplicated_and_unrecorded_events_are_found() -> None:
    gap = [*LOG[:2], (3, "round", "t#1", 3, "x", "r2"), LOG[3]]
    assert any("versions [1, 3]" in p for p in log_problems(gap, set()))
    assert any("versions [1, 2, 2]" in p for p in log_problems([*LOG, (5, "round", "t#1", 2, "x", "r2")], set()))
    assert any("recorded more than once" in p for p in log_problems([*LOG, (5, "request", "z", 1, "C", "r2")], set()))
    assert any("not recorded" in p and "r3" in p for p in log_problems(LOG, {"r1", "r2", "r3"}))
    assert any("unrecorded requests" in p for p in log_problems(LOG[:3], set()))
    assert any("log position 2 after 3" in p for p in log_problems([LOG[0], LOG[2], LOG[1], LOG[3]], set()))
