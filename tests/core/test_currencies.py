"""Currencies as the record holds them: a code's exponent, what is refused, and the currency an opening names."""

from __future__ import annotations

import pytest

from pokdeng_core.currencies import DEFAULT, currency_of, currency_problem, exponent


@pytest.mark.parametrize(("code", "digits"), [("THB", 2), ("JPY", 0), ("KWD", 3), ("ZZZ", 0)])
def test_the_exponent_of_a_code(code: str, digits: int) -> None:
    assert exponent(code) == digits


@pytest.mark.parametrize("code", ["thb", "TH", "ZZZ", "XAU"])
def test_codes_that_cannot_hold_a_stake_are_refused(code: str) -> None:
    assert currency_problem(code) is not None


def test_an_opening_names_its_currency_or_is_the_default() -> None:
    assert currency_of({"currency": "JPY", "round_id": "t#1"}) == "JPY"
    assert currency_of({"round_id": "t#1"}) == DEFAULT == "THB"  # (recorded before currencies)
    assert currency_of({"currency": ""}) == DEFAULT
