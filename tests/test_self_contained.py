"""The repository stands on its own: no file points outside it, and docs/rules.md is what the engine does.

* No text file of the repository (tracked, or new and not ignored) mentions a path outside the
  repository where the rules used to live: readers of the repository have only the repository.
* Every worked example of docs/rules.md section 4 is written as a table row that this test reads
  and checks against the engine: hand values (4.1), ante values (4.2), single stakes (4.3) and
  whole rounds (4.4). A row the engine disagrees with fails with the row's number.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import pytest

from pokdeng_core import PlayerHand, Profile, evaluate, get_profile, parse_cards, settle, settle_round
from pokdeng_core.hands import ante_is_special, ante_value
from pokdeng_core.profiles import PRESETS

ROOT = Path(__file__).resolve().parents[1]
RULES = ROOT / "docs" / "rules.md"

# Written in pieces, so that this file does not contain what it looks for.
FORBIDDEN = ("../" + "shared", "shared" + "/seeds", "shared/" + "RULES", "BASELINES" + ".md", "seeds" + "/")
TEXT_SUFFIXES = {".md", ".py", ".pyi", ".proto", ".toml", ".txt", ".yaml", ".yml", ".cfg", ".ini", ".json", ".sh"}
SKIPPED_DIRS = {".git", "build", "dist", "__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache", ".hypothesis"}


def repository_files() -> list[Path]:
    """The repository's files: what git tracks plus new files it does not ignore (a walk without git)."""
    git = shutil.which("git")
    if git is not None and (ROOT / ".git").exists():
        listed = subprocess.run(
            [git, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        ).stdout.decode("utf-8", "surrogateescape")
        return sorted({ROOT / name for name in listed.split("\0") if name})
    found = []
    for path in ROOT.rglob("*"):
        parts = set(path.relative_to(ROOT).parts)
        if path.is_file() and not parts & SKIPPED_DIRS and not any(p.endswith(".egg-info") for p in parts):
            found.append(path)
    return sorted(found)


def text_files() -> list[Path]:
    return [
        path
        for path in repository_files()
        if path.is_file() and (path.suffix in TEXT_SUFFIXES or path.name in ("LICENSE", "GENERATED", "run"))
    ]


def test_no_file_points_outside_the_repository() -> None:
    files = text_files()
    assert any(p.name == "rules.md" for p in files) and any(p.suffix == ".proto" for p in files)
    found = []
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), 1):
            for needle in FORBIDDEN:
                if needle in line:
                    found.append(f"{path.relative_to(ROOT)}:{number}: {needle!r} in {line.strip()[:100]!r}")
    assert not found, "files point outside the repository:\n" + "\n".join(found)


# --- docs/rules.md: the tables of worked examples ------------------------------------------------


@dataclass(frozen=True)
class Table:
    heading: str
    header: tuple[str, ...]
    rows: tuple[dict[str, str], ...]


def _cells(line: str) -> tuple[str, ...]:
    return tuple(cell.strip() for cell in line.strip().strip("|").split("|"))


def markdown_tables(text: str) -> list[Table]:
    """Every pipe table of ``text``, with the nearest heading above it and its rows as dictionaries."""
    tables: list[Table] = []
    lines = text.splitlines()
    heading = ""
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
        is_table = line.startswith("|") and i + 1 < len(lines)
        if is_table and re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", lines[i + 1].strip()):
            header = _cells(line)
            rows = []
            i += 2
            while i < len(lines) and lines[i].startswith("|"):
                cells = _cells(lines[i])
                assert len(cells) == len(header), f"docs/rules.md: a row of {len(cells)} cells under {header}"
                rows.append(dict(zip(header, cells, strict=True)))
                i += 1
            tables.append(Table(heading, header, tuple(rows)))
            continue
        i += 1
    return tables


def tables_with(header: tuple[str, ...]) -> list[dict[str, str]]:
    rows = [
        row
        for table in markdown_tables(RULES.read_text(encoding="utf-8"))
        if table.header == header
        for row in table.rows
    ]
    assert rows, f"docs/rules.md has no table with the columns {' | '.join(header)}"
    return rows


def profile(text: str) -> Profile:
    """``classic``, ``classic+straights``, ``classic+straights+ace_low`` ..."""
    name, *options = text.split("+")
    return get_profile(name, **dict.fromkeys(options, True))


def amount(text: str) -> int:
    cleaned = text.replace("−", "-").replace("+", "").strip()
    assert re.fullmatch(r"-?\d+", cleaned), f"not an amount: {text!r}"
    return int(cleaned)


def amounts(text: str) -> tuple[int, ...]:
    return tuple(amount(part) for part in text.split(";"))


def multiplier(text: str) -> Fraction:
    return Fraction(text.removesuffix("×"))


HAND_COLUMNS = ("#", "profile", "cards", "hand", "taem", "pays", "note")
ANTE_COLUMNS = ("#", "cards", "value", "special", "note")
STAKE_COLUMNS = (
    "#",
    "profile",
    "player",
    "banker",
    "stake",
    "reserved",
    "player net",
    "commission",
    "returned",
    "note",
)
ROUND_COLUMNS = ("#", "profile", "banker", "hands", "player nets", "banker net", "commission", "note")


def _ids(rows: list[dict[str, str]]) -> list[str]:
    return [row["#"] for row in rows]


HAND_ROWS = tables_with(HAND_COLUMNS)
ANTE_ROWS = tables_with(ANTE_COLUMNS)
STAKE_ROWS = tables_with(STAKE_COLUMNS)
ROUND_ROWS = tables_with(ROUND_COLUMNS)


def test_the_tables_cover_every_profile_and_name_each_row_once() -> None:
    ids = _ids(HAND_ROWS) + _ids(ANTE_ROWS) + _ids(STAKE_ROWS) + _ids(ROUND_ROWS)
    assert len(ids) == len(set(ids)), "docs/rules.md: row numbers must be unique"
    stake_profiles = {profile(row["profile"]).name for row in STAKE_ROWS}
    assert stake_profiles == {"classic", "ante", "room", "kingmaker"}
    assert {profile(row["profile"]).name for row in HAND_ROWS} == {"classic", "room", "kingmaker"}
    assert {profile(row["profile"]).name for row in ROUND_ROWS} >= {"classic", "room", "kingmaker"}
    assert len(STAKE_ROWS) >= 70 and len(HAND_ROWS) >= 50 and len(ANTE_ROWS) >= 30 and len(ROUND_ROWS) >= 8


def test_every_registered_profile_version_is_described() -> None:
    text = RULES.read_text(encoding="utf-8")
    missing = [f"{name}@{v}" for name, versions in PRESETS.items() for v in versions if f"`{name}@{v}`" not in text]
    assert not missing, f"docs/rules.md section 3.1 does not name {', '.join(missing)}"


@pytest.mark.parametrize("row", HAND_ROWS, ids=_ids(HAND_ROWS))
def test_hand_value_row(row: dict[str, str]) -> None:
    value = evaluate(profile(row["profile"]), parse_cards(row["cards"]))
    assert (value.label, value.taem, value.multiplier) == (row["hand"], int(row["taem"]), multiplier(row["pays"]))


@pytest.mark.parametrize("row", ANTE_ROWS, ids=_ids(ANTE_ROWS))
def test_ante_value_row(row: dict[str, str]) -> None:
    cards = parse_cards(row["cards"])
    assert row["special"] in ("yes", "no")
    assert Fraction(ante_value(cards), 10) == Fraction(row["value"])
    assert ante_is_special(cards) is (row["special"] == "yes")


@pytest.mark.parametrize("row", STAKE_ROWS, ids=_ids(STAKE_ROWS))
def test_single_stake_row(row: dict[str, str]) -> None:
    rules = profile(row["profile"])
    stake = amount(row["stake"])
    result = settle(rules, player=row["player"], banker=row["banker"], stake=stake)
    assert stake * rules.reserve_multiple == amount(row["reserved"]), "reserved"
    assert result.player_net == amount(row["player net"]), "player net"
    assert result.commission == amount(row["commission"]), "commission"
    assert amount(row["reserved"]) + result.player_net == amount(row["returned"]), "returned"
    assert result.player_net + result.banker_net + result.commission == 0


_HAND = re.compile(r"^(?P<cards>.+?)\s*@\s*(?P<stake>\d+)(?:\s+side\s+(?P<side>\d+))?$")


def round_hands(text: str) -> list[PlayerHand]:
    hands = []
    for part in text.split(";"):
        match = _HAND.match(part.strip())
        assert match is not None, f"not a hand 'cards @ stake [side N]': {part!r}"
        hands.append(PlayerHand(match["cards"], int(match["stake"]), int(match["side"] or 0)))
    return hands


@pytest.mark.parametrize("row", ROUND_ROWS, ids=_ids(ROUND_ROWS))
def test_whole_round_row(row: dict[str, str]) -> None:
    result = settle_round(profile(row["profile"]), banker=row["banker"], hands=round_hands(row["hands"]))
    assert result.player_nets == amounts(row["player nets"]), "player nets"
    assert result.banker_net == amount(row["banker net"]), "banker net"
    assert result.commission == amount(row["commission"]), "commission"
    assert result.balance == 0


def test_the_reader_refuses_what_it_cannot_read() -> None:
    """The parsers fail loudly rather than skip a row."""
    with pytest.raises(AssertionError):
        amount("about 100")
    with pytest.raises(AssertionError):
        round_hands("2♠ 3♦ for 1000")
    assert round_hands("2♣ 3♣ @ 1000 side 1000; 9♥ K♣ @ 500") == [
        PlayerHand("2♣ 3♣", 1000, 1000),
        PlayerHand("9♥ K♣", 500, 0),
    ]
    assert amount("−1000") == amount("-1000") == -1000 and amount("+970") == 970
