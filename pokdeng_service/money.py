"""Money as a person reads it: the one formatting function of every page and every line of text.

The record holds money as integer minor units of an ISO 4217 currency (``pokdeng_core.currencies``):
that is what JSON, bundles and the API carry. Wherever a person reads an amount (the dispute and verifier
pages, ``pokdeng replay``, ``recall``, ``verify`` and ``demo``), it is ``format_money``: the amount in its
currency, with the ISO 4217 exponent's decimals, the ISO code before it and the locale's grouping and
signs (Babel's ``format_currency`` with the locale's currency pattern): ``THB 9,867.63``, ``JPY 1,200``,
``-THB 5.00``; ``en_IN`` groups ``THB 12,34,567.00``, ``de`` writes ``9.867,63 THB``.

The locale is ``en`` unless ``$POKDENG_LOCALE`` names another (``th``, ``en_IN``, ...). The pages' own
script formats the same way (``Intl.NumberFormat`` with the code and the same exponent: ``page.js``).

Babel is imported when an amount is first formatted, never at import (the CLI starts light).
"""

from __future__ import annotations

import copy
import os
from decimal import Decimal
from functools import cache
from typing import TYPE_CHECKING, Any

from pokdeng_core.currencies import DEFAULT, exponent

if TYPE_CHECKING:
    from babel.numbers import NumberPattern

LOCALE_ENV = "POKDENG_LOCALE"
DEFAULT_LOCALE = "en"
MISSING = "—"  # an amount the record does not give (a balance a player's bundle leaves out)


def default_locale() -> str:
    """The locale amounts are written in: ``$POKDENG_LOCALE``, else ``en``."""
    return os.environ.get(LOCALE_ENV, "").strip() or DEFAULT_LOCALE


def minor_to_decimal(amount: int, currency: str) -> Decimal:
    """``986763`` satang → ``Decimal('9867.63')`` (the ISO 4217 exponent of ``currency``)."""
    return Decimal(int(amount)).scaleb(-exponent(currency))


def format_money(
    amount: int | None, currency: str = DEFAULT, *, signed: bool = False, locale: str | None = None
) -> str:
    """``amount`` minor units of ``currency`` as a person reads them: ``THB 9,867.63`` (``signed``: a ``+``
    before a gain, as ``+THB 200.00``; a loss always has the locale's minus sign). ``None`` is ``—``."""
    if amount is None:
        return MISSING
    from babel.numbers import format_currency

    code = currency or DEFAULT
    text = format_currency(
        minor_to_decimal(amount, code),
        code,
        format=_pattern(locale or default_locale(), exponent(code)),
        locale=locale or default_locale(),
        currency_digits=False,
    )
    return "+" + text if signed and amount > 0 else text


@cache
def _pattern(locale: str, digits: int) -> NumberPattern:
    """The locale's standard currency pattern with the ISO code for the symbol (a space between it and the
    digits) and exactly ``digits`` decimals."""
    from babel import Locale

    pattern: Any = copy.copy(Locale.parse(locale).currency_formats["standard"])
    pattern.prefix = tuple(_code(p, before=True) for p in pattern.prefix)
    pattern.suffix = tuple(_code(s, before=False) for s in pattern.suffix)
    pattern.frac_prec = (digits, digits)
    return pattern  # type: ignore[no-any-return]


def _code(affix: str, *, before: bool) -> str:
    if "¤" not in affix:
        return affix
    affix = affix.replace("¤", "¤¤")
    if before and affix.endswith("¤"):
        return affix + " "
    if not before and affix.startswith("¤"):
        return " " + affix
    return affix.replace("\xa0", " ")


def exponents() -> dict[str, int]:
    """Every ISO 4217 currency with minor units and its exponent, for the pages' script."""
    from iso4217 import Currency

    return {c.code: int(c.exponent) for c in Currency if c.exponent is not None}
