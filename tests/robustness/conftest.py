"""Fixtures of the robustness suite.

``deterministic_seeds`` (autouse): server seeds come from ``model.Seeds`` (a counter reset with
each model), so that a hypothesis sequence replays with the same cards when it is shrunk or
rerun; the shuffle and the audit are unchanged (a seed is still committed, sealed and revealed).
"""

from __future__ import annotations

import pytest

from pokdeng_service.application import rounds as application

from .model import Seeds


@pytest.fixture(autouse=True)
def deterministic_seeds(monkeypatch: pytest.MonkeyPatch) -> None:
    Seeds.reset()
    monkeypatch.setattr(application, "fresh_seed", Seeds.next)
