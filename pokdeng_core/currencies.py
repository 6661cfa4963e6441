"""Currencies: ISO 4217 codes and their minor-unit exponents (the ``iso4217`` package's table).

Money is an integer number of minor units of one currency: satang for THB (exponent 2), yen for
JPY (0), fils for KWD (3). A currency without minor units in ISO 4217 (gold, test codes, "no
currency") cannot hold a stake and is refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from iso4217 import Currency

DEFAULT = "THB"
"""The currency of a wallet or table opened without one (and of those stored before currencies)."""


def currency_of(opened: Mapping[str, Any]) -> str:
    """The currency an opening event's data names (a round's ``round_opened``, a wallet's ``Opened``): ``DEFAULT``
    for one recorded before currencies, which names none."""
    return str(opened.get("currency") or DEFAULT)


def currency_problem(code: str, field: str = "currency_code") -> str | None:
    """What is wrong with ``code`` as a wallet's or table's currency, or None."""
    if len(code) != 3 or not code.isascii() or not code.isupper():
        return f"{field} must be an ISO 4217 code: three capital letters (e.g. THB, USD, JPY)"
    try:
        exponent = Currency(code).exponent
    except ValueError:
        return f"{field} {code!r} is not an ISO 4217 currency"
    if exponent is None:
        return f"{field} {code!r} has no minor units in ISO 4217: it cannot hold a stake"
    return None


def exponent(code: str) -> int:
    """The ISO 4217 minor-unit exponent of ``code`` (2 for THB); 0 for an unknown code."""
    try:
        value = Currency(code).exponent
    except ValueError:
        return 0
    return int(value) if value is not None else 0
