"""Every limit on what a command may carry, in one place: the API, the application and the core read it here.

Each ``*_problem`` function returns what is wrong with one value (a sentence naming the field),
or None when the value is fine; callers collect the problems of a whole request and report them
together. ``check_id`` raises ``InvalidCommand`` instead, for code that checks one id at a time.

Ids (table, round, wallet, player, dealer, request and checkpoint period) are 1 to ``MAX_ID``
characters of visible text: no control characters (C0, DEL, C1 such as U+0085), no invisible
format characters (U+200B zero width space, U+202E right-to-left override, U+FEFF ...), no line or
paragraph separators, no space but the plain U+0020, no unassigned or private-use code points, and
nothing that Unicode compatibility normalisation (NFKC) would change, such as full-width letters or
ligatures that look like other ids.
"""

from __future__ import annotations

import unicodedata

from .errors import InvalidCommand

MAX_ID = 128
"""Characters in any id."""
MAX_SEATS = 16
"""Seats at any table (the most hands a profile deals to, classic's 16); seat numbers are 1 to this, 0 the banker."""
MAX_CLIENT_SEED = 256
"""Characters in a client seed."""
MAX_SEATINGS = 4
"""Seats one player may take at a table between two of its rounds (a seat taken and left again counts): so
that no player, sitting down and leaving in a loop, grows the table's stream without end."""
MAX_CONTRIBUTIONS = 8
"""Contributions to a round's client seed one contributor may send (its bet's included; the last counts):
so that no bettor can grow a round's stream, and every view and bundle of it, without bound."""
MAX_REASON = 500
"""Characters in the reason a round is voided."""
MAX_AMOUNT = 2**53 - 1
"""The largest amount of minor units a stake, deposit, withdrawal or balance may be: the largest integer
that JSON (RFC 8785, and every JavaScript client) represents exactly. On the wire amounts are int64."""
MAX_TURN_TIMEOUT = 3600
"""Seconds a table may give a hand to act."""
DEFAULT_TURN_TIMEOUT = 30
MAX_BID_ROUNDS = 1000
"""Rounds a banker bid may offer to bank."""
MAX_STATEMENT_PAGE = 1000
"""Lines in one page of a wallet statement."""
MAX_LIST_PAGE = 1000
"""Tables or wallets in one page of ListTables or ListWallets."""
DEFAULT_PAGE = 100
"""A page of ListTables, ListWallets or ListStatementEntries that asks no size; a larger one is costly."""
MAX_EVENT_BATCH = 1000
"""Events in one batch of the event feed."""
MAX_RECENT_ROUNDS = 100
"""Rounds in one page of ListRounds."""
MAX_POSITION = 2**63 - 1
"""Log positions and stream versions are int64 in every store."""

_REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
_CONTROL_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})  # in free text (an emoji's joiner is Cf: refused too)


def id_problem(value: object, field: str, *, required: bool = True) -> str | None:
    """What is wrong with an id, or None. An empty id is fine only when it is not ``required``."""
    if not isinstance(value, str):
        return f"{field} must be text"
    if not value.strip():
        return f"{field} is required (1 to {MAX_ID} characters)" if required or value else None
    if len(value) > MAX_ID:
        return f"{field} has at most {MAX_ID} characters"
    return _character_problem(value, field)


def _character_problem(value: str, field: str) -> str | None:
    if value.isascii():  # printable ASCII is exactly U+0020 to U+007E
        return None if value.isprintable() else f"{field} may not contain control characters"
    for ch in value:
        category = unicodedata.category(ch)
        if category == "Cc":
            return f"{field} may not contain control characters (U+{ord(ch):04X})"
        if category in _REFUSED_CATEGORIES or (category == "Zs" and ch != " "):
            return f"{field} may not contain invisible characters (U+{ord(ch):04X})"
    if unicodedata.normalize("NFKC", value) != value:
        return f"{field} may not contain look-alike characters (write it as {unicodedata.normalize('NFKC', value)!r})"
    return None


def new_id_problem(value: object, field: str) -> str | None:
    """What is wrong with an id being created (a wallet's, a table's), beyond ``id_problem``: it may not
    begin or end with a space, which would make a look-alike of another (``"ann "`` beside ``"ann"``).
    Ids that exist already are read as they are (records made before this rule replay unchanged)."""
    if id_problem(value, field) is None and isinstance(value, str) and value != value.strip(" "):
        return f"{field} may not begin or end with a space"
    return None


TABLE_ID_RESERVED = "#:"  # a round's id is ``<table id>#<n>``; chains start from ``table:<id>``, ``wallet:<id>``


def new_table_id_problem(value: object, field: str = "table_id") -> str | None:
    """``new_id_problem``, and no ``#`` or ``:`` in a new table's id: then a round id (``<table>#<n>``) names
    exactly one table, and no round's chain starts where a table's or a wallet's does (a round's genesis is
    its id, a table's ``table:<id>``, a wallet's ``wallet:<id>``: docs/audit.md)."""
    problem = new_id_problem(value, field)
    if problem is None and isinstance(value, str) and any(ch in TABLE_ID_RESERVED for ch in value):
        return f"{field} may not contain '#' or ':' (a round's id is the table's id, '#' and its number)"
    return problem


def check_id(value: object, field: str) -> str:
    """``value`` if it is a valid id; else ``InvalidCommand`` naming ``field``."""
    problem = id_problem(value, field)
    if problem is not None:
        raise InvalidCommand(problem, field=field)
    assert isinstance(value, str)
    return value


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def amount_problem(value: object, field: str) -> str | None:
    """What is wrong with an amount of minor units (a positive whole number up to ``MAX_AMOUNT``), or None."""
    if not _is_int(value):
        return f"{field} must be a whole number of minor units"
    assert isinstance(value, int)
    if value <= 0:
        return f"{field} must be a positive number of minor units"
    if value > MAX_AMOUNT:
        return f"{field} is too large (at most {MAX_AMOUNT})"
    return None


def int_problem(value: object, field: str, low: int, high: int) -> str | None:
    """What is wrong with a whole number that must lie in ``low..high``, or None."""
    if not _is_int(value):
        return f"{field} must be a whole number, not {value!r}"
    assert isinstance(value, int)
    if not low <= value <= high:
        return f"{field} must be {low} to {high}, not {value}"
    return None


def seat_problem(value: object, field: str, *, banker: bool = False) -> str | None:
    """What is wrong with a seat number (1 to ``MAX_SEATS``; 0, the banker, where ``banker``), or None."""
    return int_problem(value, field, 0 if banker else 1, MAX_SEATS)


def seat_count_problem(value: object, field: str = "seats") -> str | None:
    """What is wrong with a table's number of seats (1 to ``MAX_SEATS``), or None."""
    return int_problem(value, field, 1, MAX_SEATS)


def text_problem(value: object, field: str, *, most: int, required: bool, shown: bool = False) -> str | None:
    """What is wrong with free text of at most ``most`` characters (required: not blank), or None. ``shown``
    (a void's reason, a checkpoint's period: text the pages and logs show as it is): no control character and
    no invisible one, such as a bidi override that would reorder what a person reads (U+202E)."""
    if not isinstance(value, str):
        return f"{field} must be text"
    if required and not value.strip():
        return f"{field} is required (1 to {most} characters)"
    if len(value) > most:
        return f"{field} has at most {most} characters"
    for ch in value if shown else ():
        if unicodedata.category(ch) in _CONTROL_CATEGORIES:
            return f"{field} may not contain control or invisible characters (U+{ord(ch):04X})"
    return None


def client_seed_problem(value: object, field: str = "client_seed", *, required: bool) -> str | None:
    """What is wrong with a client seed (0 to ``MAX_CLIENT_SEED`` characters of any text that UTF-8
    can encode; ``required``: at least one character), or None. No character is refused: a seed
    is hashed as its UTF-8 bytes, exactly as given."""
    if not isinstance(value, str):
        return f"{field} must be text"
    if required and not value:
        return f"{field} is required (1 to {MAX_CLIENT_SEED} characters)"
    if len(value) > MAX_CLIENT_SEED:
        return f"{field} has at most {MAX_CLIENT_SEED} characters"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return f"{field} must be valid Unicode text (no lone surrogates)"
    return None
