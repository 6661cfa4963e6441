"""The suite's one rule for a missing dependency: a skip on a developer's machine, a failure under ``CI=true``."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest


def under_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def unavailable(reason: str) -> NoReturn:
    """Skip with ``reason``; under ``CI=true`` fail with it (CI must have everything the suite needs)."""
    if not under_ci():
        pytest.skip(reason)
    pytest.fail(f"{reason} (CI=true: a missing dependency is a failure, not a skip)", pytrace=False)
