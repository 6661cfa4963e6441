"""The pages, rendered with Jinja2: every value escaped, the package's own style sheet and scripts inlined.

``dispute_page`` is the page of one round (``pokdeng replay ROUND --html FILE``); ``verifier_page`` the
page that checks any bundle file a person chooses (``pokdeng verifier-page FILE``). Both are single
files that fetch nothing (a Content-Security-Policy forbids it) and check bundles in the browser with
``static/verify-*.js`` (docs/dispute.md).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from functools import cache
from importlib import resources
from typing import Any

from jinja2 import Environment
from markupsafe import Markup

from pokdeng_service.audit.verdicts import Verdict
from pokdeng_service.money import default_locale, exponents
from pokdeng_service.templating import environment
from pokdeng_service.version import __version__
from pokdeng_service.web import answer, model
from pokdeng_service.web.describe import money

# The verifier, in the order the page needs it: primitives (canonical JSON, SHA-256, HMAC, the shuffle,
# Merkle proofs, tree heads, Ed25519), the rules (hands and payouts), the bundle's checks (the record and
# the proofs; the play and its money), the page.
SCRIPTS = ("verify-core.js", "verify-rules.js", "verify-bundle.js", "verify-play.js", "page.js")
STYLE = "page.css"
_CLOSING = re.compile(r"</(script|style)|<!--", re.IGNORECASE)


def pokdeng_version() -> str:
    """The package's version, from its one place (``pokdeng_service.version``; installed or not)."""
    return __version__


def static(name: str) -> str:
    """A file of ``pokdeng_service/web/static`` (package data)."""
    return resources.files("pokdeng_service.web").joinpath("static", name).read_text(encoding="utf-8")


def _inline(text: str, name: str) -> Markup:
    """Our own static file, to be inlined in a ``<script>`` or ``<style>`` element: it must not end it."""
    if _CLOSING.search(text):
        raise ValueError(f"{name} holds a closing tag or a comment opener: it cannot be inlined")
    return Markup(text)  # (the package's own file, checked above: the one value not escaped)


@cache
def _environment() -> Environment:
    filters: dict[str, Callable[..., str]] = {
        "money": money,  # {{ amount | money(page.currency) }}: pokdeng_service.money, the one place
        "signed": lambda amount, currency: money(amount, currency, signed=True),
    }
    return environment("pokdeng_service.web", filters, keep_trailing_newline=True)


def _common(keys: Sequence[str], generated: datetime | None) -> dict[str, Any]:
    when = generated or datetime.now(UTC)
    script = "\n".join(static(name) for name in SCRIPTS)
    return {
        "version": pokdeng_version(),
        "generated": when.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "css": _inline(static(STYLE), STYLE),
        "script": _inline(script, "the scripts"),
        "script_hash": script_hash(script),
        "keys": [key.lower() for key in keys],
        "locale": default_locale(),  # the pages' script writes amounts as pokdeng_service.money does
        "exponents": " ".join(f"{code}:{digits}" for code, digits in sorted(exponents().items())),
    }


def script_hash(script: str) -> str:
    """The Content-Security-Policy source of the page's one script element (``base.html.j2`` puts it on lines
    of its own): the page runs that script and no other, so text that escaped into the page cannot run."""
    digest = hashlib.sha256(f"\n{script}\n".encode()).digest()
    return f"'sha256-{base64.b64encode(digest).decode('ascii')}'"


def dispute_page(
    events: Sequence[Any],
    bundle_raw: bytes | None = None,
    verdict: Verdict | None = None,
    keys: Sequence[str] = (),
    phase: str = "",
    generated: datetime | None = None,
) -> str:
    """The page of one round: the table, the headline, the timeline, the seeds and the verdicts.

    ``events`` are the round's stored events (``RoundView.events``); ``bundle_raw`` the round's bundle
    as exported (closed rounds): the page carries its exact bytes and checks them in the browser.
    ``verdict`` is pokdeng's own verdict on the store; ``keys`` the operator's public keys (hex) that
    the browser checks the signed tree head with."""
    bundle = json.loads(bundle_raw) if bundle_raw is not None else None
    page = model.build(events, bundle, phase)
    seats = {s.seat: s for s in page.seats}
    context = {
        **_common(keys, generated),
        "page": page,
        "verdict": verdict,
        "wallets": {w.wallet: w for w in page.wallets},
        "banker_points": seats[0].points,
        "bundle_b64": base64.b64encode(bundle_raw).decode("ascii") if bundle_raw is not None else "",
        "bundle_size": f"{len(bundle_raw):,}" if bundle_raw is not None else "",
        "bundle_name": _file_name(page.round_id),
        "answer": answer.lines(page),
        "legend": answer.legend(page.profile),
    }
    return _environment().get_template("dispute.html.j2").render(context)


def verifier_page(keys: Sequence[str] = (), generated: datetime | None = None) -> str:
    """A page that checks any bundle file chosen in it, in the browser."""
    return _environment().get_template("verifier.html.j2").render(_common(keys, generated))


def _file_name(round_id: str) -> str:
    """``demo#1`` → ``round-demo-1.json``: a file name with nothing a file system or a shell minds."""
    return "round-" + re.sub(r"[^A-Za-z0-9._-]+", "-", round_id).strip("-") + ".json"
