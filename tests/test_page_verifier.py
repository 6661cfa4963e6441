"""The page's verifier scripts (``pokdeng_service/web/static/verify-*.js``) in Node.js, no browser: the same
bundles as the docs' verifier (docs/examples/worked_round.py), the same verdicts, check for check.

The browser tests (tests/cli/test_browser_pages.py) run the pages in Chromium; these run the scripts alone,
in the order the pages load them, on the worked example and on a forger's edits of it (tests/forgery.py):
what a bundle restates, compared whole, and what could ride along. Without ``node`` they are skipped, except
under ``CI=true``, where they fail.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from pokdeng_core import events
from pokdeng_service.store import codec

from . import forgery
from .cli.pages import worked_round
from .needs import unavailable

ROOT = Path(__file__).resolve().parents[1]
STATIC = ROOT / "pokdeng_service" / "web" / "static"
SCRIPTS = ("verify-core.js", "verify-rules.js", "verify-bundle.js", "verify-play.js")  # (web/render.py's order)
BUNDLE = ROOT / "docs" / "examples" / "worked_round.json"
TEST_KEY = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"  # RFC 8032 test 1 (public)

# Reads {"scripts": [paths], "cases": [{"keys": text, "bundle": base64}]} on stdin; prints one verdict a case.
RUNNER = """
const fs = require("fs"), vm = require("vm");
const input = JSON.parse(fs.readFileSync(0, "utf8"));
for (const path of input.scripts) vm.runInThisContext(fs.readFileSync(path, "utf8"), { filename: path });
(async () => {
  const V = globalThis.PokdengVerify;
  const known = V.eventData || { fields: {}, added: () => [] };  // (each event kind's data members)
  const out = { eventData: { fields: known.fields, added: {} }, verdicts: [] };
  for (const kind of Object.keys(known.fields)) out.eventData.added[kind] = known.added(kind);
  for (const c of input.cases) {
    const v = await V.verify(new Uint8Array(Buffer.from(c.bundle, "base64")), await V.readKeys(c.keys));
    out.verdicts.push({ ok: v.ok, status: v.status, failed: v.failed, warnings: v.warnings, rendered: v.render() });
  }
  console.log(JSON.stringify(out));
})();
"""


@pytest.fixture(scope="module")
def node() -> str:
    found = shutil.which("node")
    if found is None:
        unavailable("Node.js is not installed (node)")
    return found


@pytest.fixture(scope="module")
def wr() -> ModuleType:
    return worked_round()


def page(node: str, cases: list[tuple[bytes, str]]) -> dict[str, Any]:
    """The page scripts' verdicts on ``cases`` (a bundle's bytes and the key text, "" for none)."""
    request = {
        "scripts": [str(STATIC / name) for name in SCRIPTS],
        "cases": [{"bundle": base64.b64encode(raw).decode(), "keys": keys} for raw, keys in cases],
    }
    result = subprocess.run(
        [node, "-e", RUNNER], input=json.dumps(request), capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, result.stderr
    answer: dict[str, Any] = json.loads(result.stdout)
    return answer


def documented(wr: ModuleType, raw: bytes, key: str) -> set[str]:
    """The checks the docs' verifier fails on ``raw``."""
    keys = {wr.key_id(bytes.fromhex(key)): bytes.fromhex(key)} if key else {}
    return {name for name, ok, _detail in wr.verify(raw, keys).checks if not ok}


@pytest.mark.node
def test_the_worked_example_passes_in_node(node: str) -> None:
    (verdict,) = page(node, [(BUNDLE.read_bytes(), TEST_KEY)])["verdicts"]
    assert verdict["ok"] and not verdict["warnings"], verdict["rendered"]


@pytest.mark.node
def test_what_a_bundle_restates_is_compared_whole_in_node(node: str, wr: ModuleType) -> None:
    """The attacker's bundles (tests/forgery.py, ``RESTATED``): the page passed them (its `copies` compared only
    each decision's command name, `chain` and `shuffle` were read member by member, no event's data members
    were held to docs/events.md) where `pokdeng verify` refused them. Each now fails the one check the docs'
    verifier fails; the same bundle without the edit passes."""
    raw = BUNDLE.read_bytes()
    names = list(forgery.RESTATED)
    cases = []
    for name in names:
        key = "" if forgery.RESTATED[name].rechained else TEST_KEY
        cases += [(forgery.restated(raw, wr, name, edit=False), key), (forgery.restated(raw, wr, name), key)]
    verdicts = page(node, cases)["verdicts"]
    for i, name in enumerate(names):
        genuine, edited = verdicts[2 * i], verdicts[2 * i + 1]
        assert genuine["ok"], (name, genuine["rendered"])
        expected = {forgery.RESTATED[name].check}
        assert set(edited["failed"]) == expected == documented(wr, *cases[2 * i + 1]), (name, edited["rendered"])


@pytest.mark.node
def test_nothing_rides_along_in_node(node: str, wr: ModuleType) -> None:
    """Every ``RIDE_ALONG`` edit fails in the page's scripts, the same checks as the docs' verifier."""
    names = list(forgery.RIDE_ALONG)
    cases = [(forgery.ride_along(BUNDLE.read_bytes(), wr, name), TEST_KEY) for name in names]
    for name, case, verdict in zip(names, cases, page(node, cases)["verdicts"], strict=True):
        assert not verdict["ok"] and set(verdict["failed"]) == documented(wr, *case), (name, verdict["rendered"])


@pytest.mark.node
def test_the_page_knows_every_events_data_members(node: str) -> None:
    """`form` holds each event's data to docs/events.md's members: the core's, less those added later."""
    known = page(node, [])["eventData"]
    assert {kind: set(fields) for kind, fields in known["fields"].items()} == {
        kind: set(codec.field_names(cls)) for kind, cls in events.EVENT_BY_KIND.items()
    }
    assert {kind: set(added) for kind, added in known["added"].items() if added} == {
        kind: set(added) for kind, added in events.ADDED_FIELDS.items()
    }


@pytest.mark.node
def test_bundles_of_older_engines_pass_in_node(node: str, wr: ModuleType) -> None:
    """Bundles recorded before `by`, `currency` and contributions (tests/service/legacy): their events lack the
    members added since, which `form` allows, and their decisions are read back as they were."""
    paths = sorted((ROOT / "tests" / "service" / "legacy").glob("*.json"))
    assert paths
    for path, verdict in zip(paths, page(node, [(p.read_bytes(), "") for p in paths])["verdicts"], strict=True):
        assert verdict["ok"] and wr.verify(path.read_bytes()).ok, (path.name, verdict["rendered"])


@pytest.mark.node
def test_what_the_docs_rule_out_fails_in_node(node: str, wr: ModuleType) -> None:
    """The outside verifier's bundles (tests/forgery.py, ``OUTSIDE``): a malformed sender, a sender on an automatic
    event, engine version `a.1.0`, currency `aHB`, a seat the table does not have, a balance dropped from an
    operator's export or a player's relabelled: the page fails each, the checks the docs' verifier fails; a number
    written `100.0` or `1e2` fails `form`."""
    raw = BUNDLE.read_bytes()
    names = list(forgery.OUTSIDE)
    cases = [(forgery.outside(raw, wr, name), "" if forgery.OUTSIDE[name].events else TEST_KEY) for name in names]
    cases += [(raw.replace(*forgery.NUMBERS[name], 1), TEST_KEY) for name in forgery.NUMBERS]
    verdicts = page(node, cases)["verdicts"]
    for name, case, verdict in zip([*names, *forgery.NUMBERS], cases, verdicts, strict=True):
        assert verdict["status"] == "FAIL", (name, verdict["rendered"])
        assert set(verdict["failed"]) == documented(wr, *case), (name, verdict["rendered"])


@pytest.mark.node
def test_the_page_says_unanchored_not_pass(node: str) -> None:
    """Without a key nothing anchors a bundle: the page's verdict is UNANCHORED, as `pokdeng verify`'s."""
    keyed, unkeyed = page(node, [(BUNDLE.read_bytes(), TEST_KEY), (BUNDLE.read_bytes(), "")])["verdicts"]
    assert keyed["status"] == "PASS" and keyed["rendered"].startswith("PASS  bundle of round demo#1")
    assert unkeyed["ok"] and unkeyed["status"] == "UNANCHORED", unkeyed["rendered"]
    assert unkeyed["rendered"].startswith("UNANCHORED  bundle of round demo#1")
