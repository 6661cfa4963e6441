"""``pokdeng checkpoints note|vkey|verify-note`` and ``sign --note``: signed tree heads as C2SP checkpoints."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from pokdeng_service.application.config import StoreConfig
from pokdeng_service.application.partitions import PartitionedPokdeng
from pokdeng_service.cli import EXIT_FAILED, EXIT_OK, EXIT_REFUSED, EXIT_USAGE, main
from pokdeng_service.store import merkle
from pokdeng_service.store.notes import Checkpoint, Note, Verifier, open_note, parse_verifiers

from .test_checkpoints import played_rounds


def _log_id(db: Path) -> str:
    service = PartitionedPokdeng.open_read_only(StoreConfig.from_args(db=str(db)))
    try:
        return service.apps[0].read_log().log_id
    finally:
        service.close()


def test_heads_as_notes_offline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("POKDENG_LOG_ORIGIN", "casino.example/pokdeng")
    db = tmp_path / "pokdeng.sqlite"
    store = ["--db", str(db)]
    played_rounds(db, 3)
    assert main(["checkpoints", "note", *store]) == EXIT_REFUSED  # no head yet
    assert "no signed tree head" in capsys.readouterr().err
    assert main(["keys", "new", *store]) == EXIT_OK
    assert main(["checkpoints", "sign", "--note", *store, "-o", str(tmp_path / "signed.note")]) == EXIT_OK
    origin = f"casino.example/pokdeng/{_log_id(db)}"
    assert main(["checkpoints", "note", *store, "-o", str(tmp_path / "3.note")]) == EXIT_OK
    note = (tmp_path / "3.note").read_text(encoding="utf-8")
    assert note == (tmp_path / "signed.note").read_text(encoding="utf-8")  # the note stored is the one signed
    assert note.startswith(f"{origin}\n3\n") and f"\n\n\u2014 {origin} " in note

    assert main(["checkpoints", "vkey", *store, "-o", str(tmp_path / "log.vkeys")]) == EXIT_OK
    vkeys = (tmp_path / "log.vkeys").read_text(encoding="utf-8")
    assert vkeys.startswith("# verifier keys of the log") and len(parse_verifiers(vkeys)) == 1
    vkey = str(parse_verifiers(vkeys)[0])
    assert vkey.startswith(f"{origin}+") and Checkpoint.parse(open_note(note, parse_verifiers(vkeys)).text).size == 3
    capsys.readouterr()
    for key in (vkey, str(tmp_path / "log.vkeys")):  # a verifier key, or a file of them
        assert main(["checkpoints", "verify-note", str(tmp_path / "3.note"), "--key", key]) == EXIT_OK
        out = capsys.readouterr().out
        assert f"PASS  checkpoint of {origin}, size 3" in out and "ok   log signature" in out
    check = ["checkpoints", "verify-note", str(tmp_path / "3.note"), "--key", vkey]
    assert main([*check, "--origin", origin]) == EXIT_OK
    assert main([*check, "--origin", "pokdeng.example/another"]) == EXIT_FAILED
    assert "BAD  origin" in capsys.readouterr().out

    forged = tmp_path / "forged.note"  # another size under the log's signature
    forged.write_text(note.replace(f"{origin}\n3\n", f"{origin}\n4\n"), encoding="utf-8")
    assert main(["checkpoints", "verify-note", str(forged), "--key", vkey]) == EXIT_FAILED
    assert "BAD  signature: invalid signature" in capsys.readouterr().out
    assert main(["keys", "new", "--key-file", str(tmp_path / "other.keys")]) == EXIT_OK
    other = ["--key", str(tmp_path / "other.keys")]
    assert main(["checkpoints", "vkey", *store, *other, "-o", str(tmp_path / "other.vkeys")]) == EXIT_OK
    capsys.readouterr()
    assert main(["checkpoints", "verify-note", str(tmp_path / "3.note"), "--key", str(tmp_path / "other.vkeys")]) == 1
    assert "no signature by a key given" in capsys.readouterr().out
    assert main(["checkpoints", "verify-note", str(tmp_path / "3.note"), "--key", "not+a+vkey"]) == EXIT_USAGE
    (tmp_path / "garbage.note").write_text("not a note\n", encoding="utf-8")
    assert main(["checkpoints", "verify-note", str(tmp_path / "garbage.note"), "--key", vkey]) == EXIT_FAILED

    # a rotation: the next note is signed by the new key under the same origin; vkey prints both keys
    monkeypatch.setenv("POKDENG_LOG_ORIGIN", "elsewhere.example")  # too late: the log's first note fixed its origin
    assert main(["keys", "rotate", *store]) == EXIT_OK
    played_rounds(db, 2)
    assert main(["checkpoints", "sign", *store]) == EXIT_OK
    assert main(["checkpoints", "note", *store, "-o", str(tmp_path / "5.note")]) == EXIT_OK
    assert main(["checkpoints", "vkey", *store, "-o", str(tmp_path / "log.vkeys")]) == EXIT_OK
    both = parse_verifiers((tmp_path / "log.vkeys").read_text(encoding="utf-8"))
    assert len(both) == 2 and {v.name for v in both} == {origin}
    later = (tmp_path / "5.note").read_text(encoding="utf-8")
    assert Checkpoint.parse(open_note(later, both).text).origin == origin
    assert Note.parse(later).signatures[0].key_hash != Note.parse(note).signatures[0].key_hash
    assert main(["checkpoints", "note", "--size", "3", *store]) == EXIT_OK
    assert capsys.readouterr().out.endswith(note)
    assert main(["checkpoints", "audit", *store, "--key", str(db) + ".signing-keys"]) == EXIT_OK
    assert "ok   notes: 2 checkpoint notes of origin" in capsys.readouterr().out
    assert Verifier.parse(vkey) in both


def test_a_witness_request_body(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """What a log sends a C2SP tlog-witness (add-checkpoint): ``old N``, the proof from N in base64, an empty
    line, the note; the proof verifies between the roots of the two notes."""
    db = tmp_path / "pokdeng.sqlite"
    store = ["--db", str(db)]
    played_rounds(db, 3)
    assert main(["keys", "new", *store]) == EXIT_OK
    assert main(["checkpoints", "sign", *store]) == EXIT_OK
    assert main(["checkpoints", "note", *store, "-o", str(tmp_path / "3.note")]) == EXIT_OK
    played_rounds(db, 4)
    assert main(["checkpoints", "sign", *store]) == EXIT_OK
    assert main(["checkpoints", "note", *store, "-o", str(tmp_path / "7.note")]) == EXIT_OK
    notes = {n: (tmp_path / f"{n}.note").read_text(encoding="utf-8") for n in (3, 7)}
    capsys.readouterr()
    assert main(["checkpoints", "witness-request", "3", *store]) == EXIT_OK
    body = capsys.readouterr().out
    head, note = body.split("\n\n", 1)
    assert note == notes[7] and head.split("\n")[0] == "old 3"
    proof = [base64.b64decode(line, validate=True) for line in head.split("\n")[1:]]
    old, new = (Checkpoint.parse(Note.parse(notes[n]).text) for n in (3, 7))
    assert proof and merkle.verify_consistency(3, 7, old.root, new.root, proof)
    assert main(["checkpoints", "witness-request", "0", *store]) == EXIT_OK  # a witness that never cosigned
    assert capsys.readouterr().out == "old 0\n\n" + notes[7]
    assert main(["checkpoints", "witness-request", "3", "--size", "3", *store]) == EXIT_OK
    assert capsys.readouterr().out == "old 3\n\n" + notes[3]
    assert main(["checkpoints", "witness-request", "8", *store]) == EXIT_REFUSED  # beyond the head
