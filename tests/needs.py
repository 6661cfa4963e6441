"""The suite's one rule for a missing dependency: a skip on a developer's machine, a failure under ``CI=true``;
and whether this run asked for the long forms of the volume tests (``--long``)."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest

LONG_ENV = "POKDENG_TEST_LONG"  # set by ``--long`` (tests/conftest.py), or by hand


def under_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def unavailable(reason: str) -> NoReturn:
    """Skip with ``reason``; under ``CI=true`` fail with it (CI must have everything the suite needs)."""
    if not under_ci():
        pytest.skip(reason)
    pytest.fail(f"{reason} (CI=true: a missing dependency is a failure, not a skip)", pytrace=False)


def long_run() -> bool:
    """True when the run asked for the long forms of the volume tests (``--long``, or ``POKDENG_TEST_LONG=1``)."""
    return os.environ.get(LONG_ENV, "").strip().lower() in ("1", "true", "yes")
