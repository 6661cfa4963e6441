"""Money as a person reads it: ``pokdeng_service.money.format_money``, the one place, in the round's currency
(its ISO 4217 exponent) with the locale's grouping, in ``replay``, ``recall``, ``verify`` text and the pages;
minor units only in machine output (``recall --json``, bundles)."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

from pokdeng_service.application.config import StoreConfig
from pokdeng_service.application.partitions import PartitionedPokdeng
from pokdeng_service.cli import EXIT_OK, main
from pokdeng_service.money import format_money

from ..service import play


@pytest.mark.parametrize(
    ("amount", "currency", "locale", "signed", "shown"),
    [
        (986763, "THB", "en", False, "THB 9,867.63"),
        (986763, "THB", "th", False, "THB 9,867.63"),
        (-500, "THB", "en", False, "-THB 5.00"),
        (20000, "THB", "en", True, "+THB 200.00"),
        (0, "THB", "en", True, "THB 0.00"),
        (1200, "JPY", "en", False, "JPY 1,200"),  # exponent 0
        (1234567123, "KWD", "en", False, "KWD 1,234,567.123"),  # exponent 3
        (5, "IQD", "en", False, "IQD 0.005"),  # ISO 4217's exponent 3, not CLDR's 0
        (123456700, "THB", "en_IN", False, "THB 12,34,567.00"),  # the locale's grouping
        (986763, "THB", "de", False, "9.867,63 THB"),
    ],
)
def test_format_money(amount: int, currency: str, locale: str, signed: bool, shown: str) -> None:
    assert format_money(amount, currency, signed=signed, locale=locale) == shown


def test_the_locale_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POKDENG_LOCALE", "de")
    assert format_money(100, "THB") == "1,00 THB"
    monkeypatch.delenv("POKDENG_LOCALE")
    assert format_money(100, "THB") == "THB 1.00" and format_money(None, "THB") == "—"


@pytest.fixture
def yen(tmp_path: Path) -> tuple[Path, str]:
    """A store with one closed kingmaker round played in JPY (exponent 0) and stakes of 1,500 yen."""
    db = tmp_path / "pokdeng.sqlite"
    service = PartitionedPokdeng.open(StoreConfig.from_args(db=str(db)))
    d = play.Driver(service.apps[0], chooser=play.Chooser(random.Random(1)))
    for name in ("ann", "ben"):
        d.call("open_wallet", name, currency="JPY")
        d.call("deposit", name, 1_000_000)
    d.call("open_table", "yen", "kingmaker", None, min_stake=100, max_stake=2000, seats=5, currency="JPY")
    for seat, name in ((1, "ann"), (2, "ben")):
        d.call("take_seat", "yen", name, seat)
    round_id = play.start_round(d, "yen", "cli")
    play.seat_bets(d, round_id, 1500)
    play.drive_round(d, round_id)
    service.close()
    return db, round_id


def test_replay_recall_and_verify_say_amounts_in_the_rounds_currency(
    yen: tuple[Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db, round_id = yen
    assert main(["replay", round_id, "--db", str(db)]) == EXIT_OK
    out = capsys.readouterr().out
    assert "ann stakes JPY 1,500 on seat 1 (ann)" in out
    assert "stakes JPY 100 to JPY 2,000" in out
    assert re.search(r"settled: ann [+-]?JPY [\d,]+", out), out
    assert re.search(r"money: wallets -?JPY [\d,]+ \+ house -?JPY [\d,]+ \+ commission JPY 0 = JPY 0", out), out
    assert not re.search(r"stakes 1500\b|net [+-]\d", out)
    assert main(["recall", "--table", "yen", "--db", str(db)]) == EXIT_OK
    assert "ann stakes JPY 1,500" in capsys.readouterr().out
    assert main(["verify", round_id, "--db", str(db)]) == EXIT_OK
    assert "commission JPY 0 = JPY 0" in capsys.readouterr().out
    # machine output keeps minor units, and says so
    assert main(["recall", "--table", "yen", "--json", "--db", str(db)]) == EXIT_OK
    (view,) = json.loads(capsys.readouterr().out)
    stakes = [e["data"]["stake"] for e in view["events"] if e["kind"] == "bet_placed"]
    assert stakes == [1500, 1500]


def test_the_dispute_page_says_amounts_in_the_rounds_currency(
    yen: tuple[Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db, round_id = yen
    page = tmp_path / "round.html"
    assert main(["replay", round_id, "--db", str(db), "--html", str(page)]) == EXIT_OK
    html = page.read_text(encoding="utf-8")
    assert "JPY 100 to JPY 2,000" in html and "<dd>JPY 1,500</dd>" in html
    assert "(minor units)" not in html
