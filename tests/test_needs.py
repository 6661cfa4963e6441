"""The suite's rule for a missing dependency (``tests/needs.py``): a skip on a developer's machine, a failure
under ``CI=true``."""

from __future__ import annotations

import pytest

from tests.needs import unavailable, under_ci


@pytest.mark.parametrize("value", ["", "false", "0"])
def test_away_from_ci_a_missing_dependency_is_a_skip(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("CI", value)
    assert not under_ci()
    with pytest.raises(pytest.skip.Exception, match="no chromium"):
        unavailable("no chromium")


@pytest.mark.parametrize("value", ["true", "TRUE", "1", "yes"])
def test_under_ci_a_missing_dependency_is_a_failure(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("CI", value)
    assert under_ci()
    with pytest.raises(pytest.fail.Exception, match=r"no chromium \(CI=true: a missing dependency is a failure"):
        unavailable("no chromium")
