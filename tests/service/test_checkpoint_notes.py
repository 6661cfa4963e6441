"""Signed tree heads as C2SP checkpoints (``store/notes.py``, docs/checkpoints.md "Checkpoints").

The note's bytes are rebuilt here from the specifications alone (c2sp.org/signed-note, tlog-checkpoint):
the text, the key hash, the signature line and the verifier key; ``open_note`` is held to the rules of
``note.Open`` (golang.org/x/mod/sumdb/note); and every head the service signs carries its note, which the
log's audit checks. tests/service/test_checkpoints_go.py runs Go's own note and tlog packages over them.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from pokdeng_service.application import PokdengApp
from pokdeng_service.audit.anchors import audit_log, verify_note
from pokdeng_service.store import merkle, notes
from pokdeng_service.store.facts import RecordedEvent
from pokdeng_service.store.notes import Checkpoint, Note, NoteError, Verifier, open_note
from pokdeng_service.store.roundlog import RoundLog
from pokdeng_service.store.signing import SigningKey

from . import play

KEY = SigningKey.from_hex("11" * 32)
OTHER = SigningKey.from_hex("22" * 32)
ORIGIN = "pokdeng.example/pokdeng-0123456789abcdef"
ROOT = hashlib.sha256(b"root").digest()


def _spec_note(seed: bytes, name: str, text: str) -> str:
    """A signed note as c2sp.org/signed-note writes one, from the specification alone."""
    private = Ed25519PrivateKey.from_private_bytes(seed)
    public = private.public_key().public_bytes_raw()
    key_id = hashlib.sha256(name.encode() + b"\x0a" + b"\x01" + public).digest()[:4]
    signature = private.sign(text.encode("utf-8"))
    return text + "\n" + "\u2014 " + name + " " + base64.b64encode(key_id + signature).decode() + "\n"


def test_a_checkpoint_note_byte_for_byte() -> None:
    text = f"{ORIGIN}\n42\n{base64.b64encode(ROOT).decode()}\n"
    assert Checkpoint(ORIGIN, 42, ROOT).text() == text
    note = notes.checkpoint_note(KEY, ORIGIN, 42, ROOT)
    assert note == _spec_note(KEY.seed, ORIGIN, text)
    assert note.encode().count(b"\n") == 5 and note.split("\n")[3] == ""  # three lines, an empty one, a signature
    assert note.encode().split(b"\n")[4].startswith(b"\xe2\x80\x94 ")  # U+2014 EM DASH in UTF-8, a space
    vkey = str(Verifier(ORIGIN, KEY.public))
    name, key_hash, key = vkey.split("+", 2)
    assert name == ORIGIN and int(key_hash, 16) == notes.key_hash(ORIGIN, KEY.public)
    assert base64.b64decode(key) == b"\x01" + KEY.public
    assert key_hash == hashlib.sha256(ORIGIN.encode() + b"\n\x01" + KEY.public).digest()[:4].hex()
    assert Verifier.parse(vkey) == Verifier(ORIGIN, KEY.public)
    opened = open_note(note, [Verifier.parse(vkey)])
    assert opened.text == text and [s.name for s in opened.verified] == [ORIGIN] and not opened.unverified
    assert Checkpoint.parse(opened.text) == Checkpoint(ORIGIN, 42, ROOT)


def test_open_note_as_go_opens_one() -> None:
    note = notes.checkpoint_note(KEY, ORIGIN, 7, ROOT)
    mine, other = Verifier(ORIGIN, KEY.public), Verifier(ORIGIN, OTHER.public)
    with pytest.raises(NoteError, match="no signature by a key given"):  # only unknown keys signed it
        open_note(note, [other])
    with pytest.raises(NoteError, match="no signature by a key given"):  # a key under another name is another key
        open_note(note, [Verifier("pokdeng.example/other", KEY.public)])
    cosigned = note + notes.sign_note(Note.parse(note).text, "witness.example/w1", OTHER).split("\n\n", 1)[1]
    opened = open_note(cosigned, [mine])  # a signature by a key not given is ignored (a witness's, say)
    assert [s.name for s in opened.unverified] == ["witness.example/w1"]
    assert len(open_note(cosigned, [mine, Verifier("witness.example/w1", OTHER.public)]).verified) == 2
    forged = note.replace("\n7\n", "\n8\n")  # the text changed under a known key's signature: the whole note fails
    with pytest.raises(NoteError, match="invalid signature"):
        open_note(forged, [mine])
    with pytest.raises(NoteError, match="invalid signature"):
        open_note(cosigned.replace("\n7\n", "\n8\n"), [mine])
    assert open_note(note + note.split("\n\n", 1)[1], [mine]).verified == opened.verified  # a repeated line: once
    with pytest.raises(NoteError, match="ambiguous"):
        open_note(note, [mine, mine])
    line = note.split("\n\n", 1)[1]
    malformed = {
        "control character": note.replace(ORIGIN, ORIGIN + "\t"),
        "carriage return": note.replace("\n", "\r\n", 1),
        "no empty line": note.replace("\n\n", "\n"),
        "no final newline": note[:-1],
        "a hyphen for the dash": note.replace("\u2014", "-"),
        "no space after the dash": note.replace("\u2014 ", "\u2014"),
        "bad base64": note[:-3] + "!!\n",
        "short signature": note.split("\n\n")[0] + "\n\n\u2014 " + ORIGIN + " AAAAAA==\n",
        "a name with a plus": note.replace("\u2014 " + ORIGIN, "\u2014 a+b"),
        "101 signatures": note + line * 100,
    }
    for why, text in malformed.items():
        with pytest.raises(NoteError):
            open_note(text, [mine])
            pytest.fail(why)
    with pytest.raises(NoteError, match="UTF-8"):
        open_note(note.encode() + b"\xff", [mine])


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (f"{ORIGIN}\n007\n{base64.b64encode(ROOT).decode()}\n", "leading zeros"),
        (f"{ORIGIN}\n-1\n{base64.b64encode(ROOT).decode()}\n", "decimal"),
        (f"{ORIGIN}\n{2**63}\n{base64.b64encode(ROOT).decode()}\n", "decimal"),
        (f"{ORIGIN}\n7\n", "three lines"),
        (f"{ORIGIN}\n7\n{base64.b64encode(ROOT).decode()}\n\nextension\n", "none empty"),
        (f"{ORIGIN}\n7\n{base64.b64encode(ROOT[:31]).decode()}\n", "32 bytes"),
        (f"{ORIGIN}\n7\n{base64.b64encode(ROOT).decode().rstrip('=')}\n", "base64"),
        (f"{ORIGIN}\n7\n{base64.b64encode(ROOT).decode()}", "newline"),
    ],
)
def test_a_malformed_checkpoint_is_refused(text: str, problem: str) -> None:
    with pytest.raises(NoteError, match=problem):
        Checkpoint.parse(text)


def test_a_checkpoint_may_have_extension_lines_and_size_zero() -> None:
    text = f"{ORIGIN}\n0\n{base64.b64encode(merkle.EMPTY_ROOT).decode()}\nan extension\n"
    assert Checkpoint.parse(text) == Checkpoint(ORIGIN, 0, merkle.EMPTY_ROOT, ("an extension",))
    assert Checkpoint.parse(text).text() == text


def test_verifier_keys_are_checked() -> None:
    vkey = str(Verifier(ORIGIN, KEY.public))
    name, key_hash, key = vkey.split("+", 2)
    cosigner = base64.b64encode(bytes([4]) + KEY.public).decode()
    short = base64.b64encode(bytes([1]) + KEY.public[:31]).decode()
    for bad in (
        f"{name}+{int(key_hash, 16) ^ 1:08x}+{key}",  # the hash of another name or key
        f"{name}+{key_hash[:7]}+{key}",
        f"{name}+{key_hash}+{cosigner}",  # not Ed25519 (0x04: a cosignature)
        f"{name}+{key_hash}+{short}",
        f"a b+{key_hash}+{key}",
        "",
    ):
        with pytest.raises(NoteError):
            Verifier.parse(bad)
    for bad_name in ("", "a b", "a+b", "a\u00a0b"):
        with pytest.raises(NoteError):
            Verifier(bad_name, KEY.public)
    with pytest.raises(NoteError):
        notes.origin_of("my casino", "pokdeng-01")
    assert notes.origin_of("", "pokdeng-01") == "pokdeng.example/pokdeng-01"
    assert notes.origin_of("casino.example/pokdeng/", "pokdeng-01") == "casino.example/pokdeng/pokdeng-01"


def test_a_logs_origin_is_fixed_by_its_first_note() -> None:
    log = RoundLog("pokdeng-0123456789abcdef")
    log.append("t#1", hashlib.sha256(b"1").hexdigest())
    log.sign(KEY, 1, "casino.example/pokdeng")
    assert log.origin == "casino.example/pokdeng/pokdeng-0123456789abcdef"
    log.append("t#2", hashlib.sha256(b"2").hexdigest())
    log.sign(KEY, 2, "elsewhere.example")  # another prefix configured later: the log keeps its origin
    assert log.origin == "casino.example/pokdeng/pokdeng-0123456789abcdef"
    assert Checkpoint.parse(Note.parse(str(log.head["note"] if log.head else "")).text).size == 2


def _sign(driver: play.Driver, rounds: int) -> None:
    if not driver.app.read_log().log_id:  # (the first time: no round has closed)
        play.open_wallets(driver, ["n-p1", "n-p2"])
        play.open_table(driver, "n", "classic", [(1, "n-p1"), (2, "n-p2")])
    for k in range(rounds):
        round_id = play.start_round(driver, "n", f"note-{k}")
        play.seat_bets(driver, round_id, 100)
        play.drive_round(driver, round_id)
    driver.call("sign_tree_head")


def test_every_head_is_signed_as_a_note(make_app: Callable[..., PokdengApp]) -> None:
    app = make_app(POKDENG_LOG_ORIGIN="casino.example/pokdeng")
    driver = play.Driver(app)
    _sign(driver, 2)
    _sign(driver, 1)
    log = app.read_log()
    origin = f"casino.example/pokdeng/{log.log_id}"
    keys = play.signing_keys().public
    verifier = Verifier(origin, bytes.fromhex(keys.hex(next(iter(keys)))))
    for position, head in log.heads:
        note = log.notes[position]
        assert app.tree_head_note(head.tree_size) == (head, note)
        checkpoint = Checkpoint.parse(open_note(note, [verifier]).text)
        assert checkpoint == Checkpoint(origin, head.tree_size, bytes.fromhex(head.root_hash))
        assert verify_note(note.encode(), [verifier], origin).ok
    assert [h.tree_size for _p, h in log.heads] == [2, 3]
    verdict = audit_log(app, keys)
    assert verdict.ok and any(c.name == "notes" and "2 checkpoint notes" in c.detail for c in verdict.checks)
    bad = verify_note(log.notes[log.heads[0][0]].encode(), [Verifier(origin, OTHER.public)])
    assert not bad.ok and "no signature by a key given" in bad.render()


class _Edited:
    """An application whose log events read back edited (``edit`` maps each stored event to what is read)."""

    def __init__(self, app: PokdengApp, edit: Callable[[RecordedEvent], RecordedEvent]) -> None:
        self.app, self.edit = app, edit

    @property
    def recorder(self) -> Any:
        return self.app.recorder

    @property
    def mapper(self) -> Any:
        return self.app.mapper

    def log_events(self) -> list[RecordedEvent]:
        return [self.edit(e) for e in self.app.log_events()]


def test_the_audit_names_a_note_that_is_not_its_heads(make_app: Callable[..., PokdengApp]) -> None:
    app = make_app()
    driver = play.Driver(app)
    _sign(driver, 2)
    _sign(driver, 1)
    keys = play.signing_keys().public
    log = app.read_log()
    first, last = (log.notes[p] for p, _h in log.heads)

    def swapped(event: RecordedEvent) -> RecordedEvent:  # the first head carries the second head's note
        if event.kind == "HeadSigned" and event.data["tree_size"] == 2:
            return event._replace(data={**event.data, "note": last})
        return event

    verdict = audit_log(_Edited(app, swapped), keys)
    assert not verdict.ok and "not that head's size and root" in verdict.first_difference

    resigned = notes.checkpoint_note(OTHER, first.split("\n", 1)[0], 2, bytes.fromhex(log.heads[0][1].root_hash))

    def other_key(event: RecordedEvent) -> RecordedEvent:  # a note signed by another key than the head's
        if event.kind == "HeadSigned" and event.data["tree_size"] == 2:
            return event._replace(data={**event.data, "note": resigned})
        return event

    verdict = audit_log(_Edited(app, other_key), keys)
    assert not verdict.ok and "no signature by a key given" in verdict.first_difference
    assert audit_log(_Edited(app, other_key)).ok  # without keys the signatures are not checked

    def old(event: RecordedEvent) -> RecordedEvent:  # heads signed before notes: a warning, not a failure
        return event._replace(data={k: v for k, v in event.data.items() if k != "note"})

    verdict = audit_log(_Edited(app, old), keys)
    assert verdict.ok and any("no head has a checkpoint note" in w for w in verdict.warnings)


DOCS = Path(__file__).resolve().parents[2] / "docs" / "checkpoints.md"
RFC8032_SECRET = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"  # RFC 8032 test 1 (published)


def _fenced(text: str, language: str) -> str:
    block = re.search(rf"```{language}\n(.*?)```", text, re.DOTALL)
    assert block is not None, language
    return block.group(1)


def test_the_documented_note_is_what_pokdeng_signs() -> None:
    """docs/checkpoints.md's example note and verifier key, rebuilt from the specification and by pokdeng."""
    text = DOCS.read_text(encoding="utf-8")
    key = SigningKey.from_hex(RFC8032_SECRET)
    assert key.public.hex() == "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"
    leaves = [merkle.leaf_hash(f"demo#{i + 1}", hashlib.sha256(str(i).encode()).hexdigest()) for i in range(7)]
    root = merkle.root(leaves)
    assert root.hex() in text
    origin = "pokdeng.example/pokdeng-0123456789abcdef"
    documented = _fenced(text, "note")
    assert (
        documented
        == notes.checkpoint_note(key, origin, 7, root)
        == _spec_note(key.seed, origin, Checkpoint(origin, 7, root).text())
    )
    vkey = _fenced(text, "vkey").strip()
    assert vkey == str(Verifier(origin, key.public)) and f"(key hash `{vkey.split('+')[1]}`" in text
    signature = Note.parse(documented).signatures[0]
    assert f"`{signature.signature.hex()[:8]}…{signature.signature.hex()[-2:]}`" in text
    assert f"its text is {len(Note.parse(documented).text.encode())} bytes" in text
