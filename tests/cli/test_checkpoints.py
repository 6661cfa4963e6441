"""``pokdeng keys``, ``pokdeng checkpoints`` and ``pokdeng verify BUNDLE --key``: anchored bundles offline."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from pokdeng_service.application.config import StoreConfig
from pokdeng_service.application.errors import NotFound
from pokdeng_service.application.partitions import PartitionedPokdeng
from pokdeng_service.cli import EXIT_FAILED, EXIT_OK, EXIT_REFUSED, EXIT_UNANCHORED, EXIT_UNAVAILABLE, EXIT_USAGE, main

from ..service import play


def played_rounds(db: Path, rounds: int, table: str = "km") -> list[str]:
    service = PartitionedPokdeng.open(StoreConfig.from_args(db=str(db)))
    app = service.apps[0]
    d = play.Driver(app, prefix=f"{table}-{rounds}", chooser=play.Chooser(random.Random(rounds)))
    try:
        app.get_table(table)
    except NotFound:
        play.open_wallets(d, [f"{table}-ann", f"{table}-ben"])
        play.open_table(d, table, "kingmaker", [(1, f"{table}-ann"), (2, f"{table}-ben")])
    ids = []
    for _ in range(rounds):
        round_id = play.start_round(d, table, "cli")
        play.seat_bets(d, round_id, 300)
        play.drive_round(d, round_id)
        ids.append(round_id)
    service.close()
    return ids


def test_keys_new_show_rotate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "pokdeng.sqlite"
    assert main(["keys", "new", "--db", str(db)]) == EXIT_OK
    key_file = tmp_path / "pokdeng.sqlite.signing-keys"
    assert key_file.stat().st_mode & 0o777 == 0o600
    out = capsys.readouterr().out
    first = out.split("new signing key ", 1)[1].split()[0]
    assert main(["keys", "new", "--db", str(db)]) == EXIT_USAGE  # never overwrites a key
    assert "exists already" in capsys.readouterr().err
    assert main(["keys", "rotate", "--key-file", str(key_file)]) == EXIT_OK
    assert main(["keys", "show", "--db", str(db), "-o", str(tmp_path / "public.keys")]) == EXIT_OK
    lines = capsys.readouterr().out
    published = (tmp_path / "public.keys").read_text()
    assert first in published and published.count("current") == 1 and published.count("retired") == 1
    assert "private" not in published and "private" not in lines
    stored = json.loads(key_file.read_text())
    assert [("private_key" in k) for k in stored["keys"]] == [False, True]  # only the current key's private half
    assert main(["keys", "show", "--key-file", str(tmp_path / "missing")]) == EXIT_USAGE


def test_an_anchored_bundle_verifies_offline_with_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "pokdeng.sqlite"
    rounds = played_rounds(db, 3)
    store = ["--db", str(db)]
    assert main(["checkpoints", "sign", *store]) == EXIT_REFUSED  # no key yet
    assert "no signing key" in capsys.readouterr().err
    assert main(["keys", "new", *store]) == EXIT_OK
    assert main(["keys", "show", *store, "-o", str(tmp_path / "public.keys")]) == EXIT_OK
    key = ["--key", str(tmp_path / "public.keys")]
    bundle = tmp_path / "round.json"
    assert main(["export", rounds[1], *store, "-o", str(bundle)]) == EXIT_OK  # before any head: unanchored
    capsys.readouterr()
    assert main(["verify", str(bundle)]) == EXIT_UNANCHORED
    out = capsys.readouterr().out
    assert "UNANCHORED  bundle of round" in out and "WARN unanchored: no signed tree head" in out
    assert main(["verify", str(bundle), "--allow-unanchored"]) == EXIT_OK
    assert main(["verify", str(bundle), *key]) == EXIT_FAILED
    assert "BAD  anchor: unanchored" in capsys.readouterr().out

    assert main(["checkpoints", "sign", *store, "-o", str(tmp_path / "head1.json")]) == EXIT_OK
    # (found from the outside) an output in a folder that does not exist is bad usage before any work: no head
    # is signed whose file could not be written, and no key file's public keys are lost on the way
    capsys.readouterr()
    nowhere = str(tmp_path / "missing" / "out.json")
    for command in (["checkpoints", "sign"], ["checkpoints", "show"], ["checkpoints", "prove", "1"], ["keys", "show"]):
        assert main([*command, *store, "-o", nowhere]) == EXIT_USAGE, command
        assert "no such folder" in capsys.readouterr().err
    assert main(["checkpoints", "show", *store]) == EXIT_OK
    assert json.loads(capsys.readouterr().out) == json.loads((tmp_path / "head1.json").read_text())  # none signed
    # (found from the outside: a mistyped --db made a new store, and `audit -o` printed instead of writing)
    typo = tmp_path / "typo.sqlite"
    assert main(["checkpoints", "sign", "--db", str(typo)]) == EXIT_UNAVAILABLE
    assert "no such database" in capsys.readouterr().err and not list(tmp_path.glob("typo*"))
    audited = tmp_path / "audit.txt"
    assert main(["checkpoints", "audit", *store, "--key", str(tmp_path / "public.keys"), "-o", str(audited)]) == EXIT_OK
    assert "log" in audited.read_text() and "PASS" in audited.read_text()
    assert main(["export", rounds[1], *store, "-o", str(bundle)]) == EXIT_OK
    capsys.readouterr()
    assert main(["verify", str(bundle), *key]) == EXIT_OK
    out = capsys.readouterr().out
    assert "ok   anchor: Ed25519 signature of key" in out and "WARN" not in out
    assert main(["verify", str(bundle)]) == EXIT_UNANCHORED  # a head, but no key to check it with
    assert "WARN unanchored: the signed tree head" in capsys.readouterr().out
    public = (tmp_path / "public.keys").read_text().splitlines()[1].split()[1]  # (after the comment line)
    assert main(["verify", "--bundle", str(bundle), "--key", public]) == EXIT_OK  # the key's hex itself
    other = tmp_path / "other.keys"
    assert main(["keys", "new", "--key-file", str(other)]) == EXIT_OK
    assert main(["verify", str(bundle), "--key", str(other)]) == EXIT_FAILED
    assert "not among the keys given" in capsys.readouterr().out

    # a payout rewritten and the bundle's digest recomputed: refused whatever else the forger fixed
    data = json.loads(bundle.read_bytes())
    data["payouts"][0]["net"] += 1
    bundle.write_text(json.dumps(data))
    assert main(["verify", str(bundle), *key]) == EXIT_FAILED

    # rotation: the old head and its bundles stay verifiable with the published keys
    assert main(["export", rounds[0], *store, "-o", str(bundle)]) == EXIT_OK
    assert main(["keys", "rotate", *store]) == EXIT_OK
    later = played_rounds(db, 2)
    assert main(["checkpoints", "sign", *store, "-o", str(tmp_path / "head2.json")]) == EXIT_OK
    assert main(["keys", "show", *store, "-o", str(tmp_path / "public.keys")]) == EXIT_OK
    assert main(["verify", str(bundle), *key]) == EXIT_OK
    assert main(["export", later[1], *store, "-o", str(tmp_path / "later.json")]) == EXIT_OK
    assert main(["verify", str(tmp_path / "later.json"), *key]) == EXIT_OK
    heads = [json.loads((tmp_path / f"head{n}.json").read_text()) for n in (1, 2)]
    assert heads[0]["key_id"] != heads[1]["key_id"] and (heads[0]["tree_size"], heads[1]["tree_size"]) == (3, 5)

    # consistency between the two heads, offline
    proof = tmp_path / "proof.json"
    assert main(["checkpoints", "prove", "3", "5", *store, "-o", str(proof)]) == EXIT_OK
    check = ["checkpoints", "check", str(tmp_path / "head1.json"), str(tmp_path / "head2.json"), str(proof)]
    capsys.readouterr()
    assert main([*check, *key]) == EXIT_OK
    assert main(check) == EXIT_OK and "WARN unanchored" in capsys.readouterr().out
    bad = json.loads(proof.read_text())
    bad["path"][0] = "00" * 32
    proof.write_text(json.dumps(bad))
    assert main([*check, *key]) == EXIT_FAILED
    assert "BAD  consistency" in capsys.readouterr().out
    assert main(["checkpoints", "show", *store]) == EXIT_OK
    assert json.loads(capsys.readouterr().out)["tree_size"] == 5
    assert main(["checkpoints", "audit", *store, *key]) == EXIT_OK
    assert main(["checkpoints", "audit", *store, "--key", str(other)]) == EXIT_FAILED


def test_check_audit_verify_note_and_keys_show_say_json_as_verify_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--json``: one object, as ``verify --json`` prints it: every verdict (subject, ok, status, the first
    difference, each check's name, ok and detail, the warnings), ``passed`` and ``failed``, and the exit code;
    ``audit``'s verdicts name their partition. ``keys show --json`` is the key file's form without a private half,
    and ``--key`` reads it."""
    db = tmp_path / "pokdeng.sqlite"
    store = ["--db", str(db)]
    played_rounds(db, 2)
    assert main(["keys", "new", *store]) == EXIT_OK
    published = tmp_path / "public.json"
    assert main(["keys", "show", *store, "--json", "-o", str(published)]) == EXIT_OK
    keys = json.loads(published.read_text())
    assert keys["format"] == "pokdeng-signing-keys" and [k["key_id"] for k in keys["keys"]] == [keys["current"]]
    assert "private_key" not in published.read_text()
    head, proof, note, vkey = (tmp_path / name for name in ("head.json", "proof.json", "note.txt", "vkey.txt"))
    assert main(["checkpoints", "sign", *store, "-o", str(head)]) == EXIT_OK
    assert main(["checkpoints", "prove", "2", "2", *store, "-o", str(proof)]) == EXIT_OK
    assert main(["checkpoints", "note", *store, "-o", str(note)]) == EXIT_OK
    assert main(["checkpoints", "vkey", *store, "-o", str(vkey)]) == EXIT_OK
    capsys.readouterr()

    check = ["checkpoints", "check", str(head), str(head), str(proof), "--json"]
    assert main([*check, "--key", str(published)]) == EXIT_OK  # (the JSON of keys show is a --key file)
    report = json.loads(capsys.readouterr().out)
    assert set(report) == {"verdicts", "passed", "failed", "exit_code"}
    assert (report["passed"], report["failed"], report["exit_code"]) == (1, 0, EXIT_OK)
    (verdict,) = report["verdicts"]
    assert set(verdict) == {"subject", "ok", "status", "first_difference", "checks", "warnings"}
    assert verdict["status"] == "PASS" and verdict["subject"].startswith("consistency of log")
    assert {c["name"] for c in verdict["checks"]} >= {"consistency", "old head", "new head"}
    assert all(set(c) == {"name", "ok", "detail"} for c in verdict["checks"])
    assert main(check) == EXIT_OK  # without a key: passes, and the warning says what was not checked
    assert json.loads(capsys.readouterr().out)["verdicts"][0]["warnings"][0].startswith("unanchored")
    bad = json.loads(proof.read_text())
    bad["path"] = ["00" * 32]
    proof.write_text(json.dumps(bad))
    assert main(check) == EXIT_FAILED
    failed = json.loads(capsys.readouterr().out)
    assert failed["exit_code"] == EXIT_FAILED and failed["failed"] == 1
    assert failed["verdicts"][0]["first_difference"].startswith("consistency")

    audit_file = tmp_path / "audit.json"
    assert main(["checkpoints", "audit", *store, "--key", str(published), "--json", "-o", str(audit_file)]) == EXIT_OK
    audited = json.loads(audit_file.read_text())
    assert [(v["partition"], v["status"]) for v in audited["verdicts"]] == [(0, "PASS")]
    assert audited["exit_code"] == EXIT_OK and audited["passed"] == 1

    capsys.readouterr()
    assert main(["checkpoints", "verify-note", str(note), "--key", str(vkey), "--json"]) == EXIT_OK
    noted = json.loads(capsys.readouterr().out)
    assert noted["verdicts"][0]["subject"].startswith("checkpoint of ") and noted["exit_code"] == EXIT_OK
    assert main(["checkpoints", "verify-note", str(note), "--key", str(vkey), "--origin", "x/y", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["verdicts"][0]["ok"] is False
