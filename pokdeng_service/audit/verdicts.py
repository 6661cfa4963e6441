"""Verdicts: the outcome of an audit, check by check, and the first difference found.

Every audit (a live round, a replay, an offline bundle) fills one ``Verdict``; the CLI
renders it, the API converts it (``as_dict``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Check:
    name: str
    ok: bool
    detail: str = ""


@dataclass
class Verdict:
    """The outcome of an audit: every check, and the first difference found (if any)."""

    subject: str
    checks: list[Check] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # what a pass does not prove (a bundle "unanchored: ...")
    unanchored: str = ""  # a bundle no checked signature anchors: why (its verdict is UNANCHORED, not PASS)

    @property
    def ok(self) -> bool:
        """Every check passed (an unanchored bundle's too: ``status`` tells it from a pass)."""
        return bool(self.checks) and all(c.ok for c in self.checks)

    @property
    def status(self) -> str:
        """``FAIL`` when a check failed; else ``UNANCHORED`` for a bundle no signed tree head was checked to
        cover (every check passed, but nothing outside the bundle vouches for its events); else ``PASS``."""
        if not self.ok:
            return "FAIL"
        return "UNANCHORED" if self.unanchored else "PASS"

    @property
    def first_difference(self) -> str:
        for check in self.checks:
            if not check.ok:
                return f"{check.name}: {check.detail}"
        return ""

    def add(self, name: str, ok: bool, detail: str = "") -> bool:
        self.checks.append(Check(name, ok, detail))
        return ok

    def leave_unanchored(self, why: str) -> None:
        """Nothing checked anchors the bundle (no signed head, or no key to check its signature with): said in a
        warning, and the verdict is ``UNANCHORED``."""
        self.unanchored = why
        self.warn(why)

    def warn(self, text: str) -> None:
        """Something the checks do not cover, said plainly (it fails nothing)."""
        self.warnings.append(text)

    def render(self) -> str:
        lines = [f"{self.status}  {self.subject}"]
        for check in self.checks:
            lines.append(f"  {'ok ' if check.ok else 'BAD'}  {check.name}{': ' + check.detail if check.detail else ''}")
        lines.extend(f"  WARN {warning}" for warning in self.warnings)
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        return {
            "subject": self.subject,
            "ok": self.ok,
            "status": self.status,
            "first_difference": self.first_difference,
            "checks": [{"name": c.name, "ok": c.ok, "detail": c.detail} for c in self.checks],
            "warnings": list(self.warnings),
        }
