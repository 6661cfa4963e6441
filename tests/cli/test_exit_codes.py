"""Every ``pokdeng`` command exits with the README's codes, and says why on one line of standard error.

0 success, 1 a check failed, 2 bad usage (an unknown option, a missing or malformed argument, an input file
that cannot be read, an output in a folder that does not exist or that is a folder), 3 not found or refused, 4
the store (or the platform's wallet) cannot be reached: a SQLite store that is missing or not a database, a
PostgreSQL server that does not answer (127.0.0.1:1); 5 a bundle no checked head anchors.

The commands are walked from the parser (``build_parser``): a command without a row in ``CASES`` fails
``test_every_command_has_its_cases``, and every command is also run with an option it does not have and, if it
has required arguments, without them. Each case runs ``main`` in this process, on one store made for the module.
"""

from __future__ import annotations

import argparse
import io
import logging
import shlex
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from pokdeng_service.application.config import StoreConfig
from pokdeng_service.application.partitions import PartitionedPokdeng
from pokdeng_service.cli import main
from pokdeng_service.cli.main import build_parser

from .stores import play_rounds


def _leaves(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], bool]]:
    """Every command that runs (``("checkpoints", "sign")``), and whether it has a required argument."""
    groups = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not groups:
        yield path, any(a.required for a in parser._actions)
    for group in groups:
        for name, sub in group.choices.items():
            yield from _leaves(sub, (*path, name))


LEAVES = dict(_leaves(build_parser()))

STORE = "--db {db}"
MISSING = "--db {folder}/missing.sqlite"  # (no such database: read only, nothing is made)
PG = "--postgres-url postgresql://pokdeng:secret@127.0.0.1:1/pokdeng"  # (nothing listens there)
PG_WRITE = PG + " --vault-key-file {vault}"  # (a store opened to write needs its vault key first)
NOWHERE = "{folder}/no-such-folder/out.file"

# command -> (arguments after the command's words, expected exit code); {names} are the evidence's files
CASES: dict[tuple[str, ...], list[tuple[str, int]]] = {
    ("serve",): [("--port 0 --tokens {absent}", 2), (f"{PG_WRITE} --port 0", 4)],
    ("demo",): [("--rounds 0", 2), ("--db {notdb}", 4)],
    ("replay",): [
        (f"km {STORE}", 2),
        (f"{{closed}} {STORE} --html {NOWHERE}", 2),
        (f"{{closed}} {STORE} --html {{adir}}", 2),
        (f"{{closed}} {STORE} --html {{folder}}/page.html --key {{absent}}", 2),
        (f"{{closed}} {STORE} --player zed", 2),
        (f"no-such#1 {STORE}", 3),
        (f"{{closed}} {MISSING}", 4),
        (f"{{closed}} {PG}", 4),
        (f"{{closed}} {STORE}", 0),
    ],
    ("verifier-page",): [(NOWHERE, 2), ("{adir}", 2), ("{folder}/verifier.html --key {absent}", 2)],
    ("verify",): [
        (STORE, 2),
        ("{absent}.json", 2),
        ("{bundle} --key {absent}", 2),
        (f"--all --json --quiet {STORE}", 2),
        (f"--all {STORE} --partitions 0", 2),
        ("{tampered}", 1),
        ("{bundle} --key {other}", 1),
        (f"no-such#1 {STORE}", 3),
        (f"--all {MISSING}", 4),
        (f"{{closed}} {PG}", 4),
        (f"--all {PG}", 4),
        ("{bundle}", 5),
        ("{bundle} --key {public}", 0),
        (f"--all --quiet {STORE}", 0),
    ],
    ("export",): [
        (f"km# {STORE}", 2),
        (f"{{closed}} {STORE} -o {NOWHERE}", 2),
        (f"{{closed}} {STORE} -o {{adir}}", 2),
        (f"{{open}} {STORE}", 3),  # (its seed is still secret)
        (f"{{closed}} {MISSING}", 4),
        (f"{{closed}} {PG}", 4),
    ],
    ("recall",): [
        (STORE, 2),
        (f"--table km --limit 0 {STORE}", 2),
        (f"--table no-such {STORE}", 3),
        (f"--table km {MISSING}", 4),
        (f"--player ann {PG}", 4),
        (f"--table km --json {STORE}", 0),
    ],
    ("backup",): [
        (f"{NOWHERE} {STORE}", 2),
        (f"{{adir}} {STORE}", 2),
        (f"{{db}} {STORE}", 2),  # (never over a file)
        (f"{{folder}}/backup.sqlite {MISSING}", 4),
        (f"{{folder}}/backup.dump {PG}", 4),
    ],
    ("restore",): [
        ("{db} --db {db}", 2),  # (never over a store)
        ("{absent} --db {folder}/restored.sqlite", 4),  # (a backup is a store: missing, "no such database")
        (f"{{db}} {PG}", 4),
    ],
    ("rebuild-read-models",): [(f"{STORE} --partitions 0", 2), (MISSING, 4), (PG_WRITE, 4)],
    ("rtp",): [("no-such-profile", 2), ("classic --stake 0", 2), ("ante --straights", 2)],
    ("simulate",): [("classic --rounds 1", 2), ("room --straights --rounds 10", 2)],
    ("rng-report",): [(f"--out {NOWHERE}", 2), ("--out {bundle}", 2), ("--decks 9 --out {folder}", 2)],
    ("math-report",): [
        ("no-such-profile", 2),
        (f"classic --out {NOWHERE}", 2),
        ("room --straights --out {folder}", 2),
    ],
    ("keys", "new"): [(f"--key-file {NOWHERE}", 2), ("--key-file {adir}", 2), (STORE, 2)],  # (never over a key)
    ("keys", "show"): [("--key-file {absent}", 2), (f"{STORE} -o {NOWHERE}", 2), (f"{STORE} --json", 0)],
    ("keys", "rotate"): [("--key-file {absent}", 2), ("--key-file {public}", 2)],  # (public keys sign nothing)
    ("auth", "new"): [("--role player", 2), ("--role no-such-role", 2), (f"--role auditor --tokens {NOWHERE}", 2)],
    ("auth", "hash"): [("", 2)],  # (nothing on standard input)
    ("checkpoints", "sign"): [
        (f"{STORE} -o {NOWHERE}", 2),
        (f"{STORE} --key-file {{absent}}", 3),  # (no signing key)
        (MISSING, 4),
        (PG_WRITE, 4),
    ],
    ("checkpoints", "note"): [(f"{STORE} --size x", 2), (f"{STORE} --size 99", 3), (MISSING, 4), (PG, 4), (STORE, 0)],
    ("checkpoints", "witness-request"): [
        (f"x {STORE}", 2),
        (f"1 {STORE} --size 99", 3),
        (f"1 {MISSING}", 4),
        (f"1 {PG}", 4),
    ],
    ("checkpoints", "vkey"): [
        (f"{STORE} --key-file {{absent}}", 2),
        (f"{STORE} --key {{absent}}", 2),
        (f"{MISSING} --key {{public}}", 4),
        (f"{PG} --key {{public}}", 4),
    ],
    ("checkpoints", "verify-note"): [
        ("{absent} --key {vkey}", 2),
        ("{note} --key not-a-verifier-key", 2),
        ("{note} --key {vkey} --origin another.example/log", 1),
        ("{note} --key {vkey} --json", 0),
    ],
    ("checkpoints", "show"): [(f"{STORE} --size 99", 3), (f"{STORE} -o {{adir}}", 2), (MISSING, 4), (PG, 4)],
    ("checkpoints", "prove"): [(f"x {STORE}", 2), (f"1 99 {STORE}", 3), (f"1 {MISSING}", 4), (f"1 {PG}", 4)],
    ("checkpoints", "check"): [
        ("{absent} {head} {proof}", 2),
        ("{note} {head} {proof}", 2),  # (not JSON)
        ("{head} {head} {proof} --key {absent}", 2),
        ("{head} {head} {proof} --key {other}", 1),
        ("{head} {head} {proof} --key {public} --json", 0),
    ],
    ("checkpoints", "audit"): [
        (f"{STORE} --key {{absent}}", 2),
        (f"{STORE} --key {{other}}", 1),
        (MISSING, 4),
        (PG, 4),
        (f"{STORE} --key {{public}} --json", 0),
    ],
    ("wallet", "reconcile"): [
        (STORE, 2),  # (no platform named)
        (f"{STORE} --wallet-url 127.0.0.1:1 --since yesterday", 2),
        (f"{STORE} --wallet-url 127.0.0.1:1 --timeout 0.2", 4),  # (the platform does not answer)
        (f"{MISSING} --wallet-url 127.0.0.1:1", 4),
        (f"{PG} --wallet-url 127.0.0.1:1", 4),
    ],
    ("wallet", "pending"): [(f"{STORE} --partition-url 0", 2), (MISSING, 4), (PG, 4), (f"{STORE} --json", 0)],
    ("wallet", "resolve"): [
        (f"t#1:credit:ann --reason ' ' {STORE}", 2),
        (f"no-such-tx --reason paid {STORE}", 3),
        (f"t#1:credit:ann --reason paid {MISSING}", 4),
        (f"t#1:credit:ann --reason paid {PG_WRITE}", 4),
    ],
}


@pytest.fixture(scope="module")
def evidence(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A store with closed rounds and one open, its signing key and a signed head; the head, a proof, its note
    and verifier key, public keys and another signer's, a bundle (anchored) and a tampered one; a folder, a file
    that is no database, and names of files that do not exist."""
    folder = tmp_path_factory.mktemp("exit-codes")
    db = folder / "pokdeng.sqlite"
    service = PartitionedPokdeng.open(StoreConfig.from_args(db=str(db)))
    closed, open_round = play_rounds(service.apps[0])
    service.close()
    files = {name: str(folder / name) for name in ("head.json", "proof.json", "note.txt", "vkey.txt", "public.keys")}
    store = ["--db", str(db)]
    for argv in (
        ["keys", "new", *store],
        ["keys", "show", *store, "-o", files["public.keys"]],
        ["checkpoints", "sign", *store, "-o", files["head.json"]],
        ["checkpoints", "prove", "3", "3", *store, "-o", files["proof.json"]],
        ["checkpoints", "note", *store, "-o", files["note.txt"]],
        ["checkpoints", "vkey", *store, "-o", files["vkey.txt"]],
        ["export", closed[0], *store, "-o", str(folder / "bundle.json")],
        ["keys", "new", "--key-file", str(folder / "other.signing-keys")],
        ["keys", "show", "--key-file", str(folder / "other.signing-keys"), "-o", str(folder / "other.keys")],
    ):
        assert main(argv) == 0, argv
    raw = bytearray((folder / "bundle.json").read_bytes())
    raw[len(raw) // 3] ^= 0x01
    (folder / "tampered.json").write_bytes(bytes(raw))
    (folder / "adir").mkdir()
    (folder / "notdb").mkdir()
    (folder / "notdb" / "x.sqlite").write_text("not a database\n")
    return {
        "folder": str(folder),
        "db": str(db),
        "vault": f"{db}.vault-key",
        "closed": closed[0],
        "open": open_round,
        "head": files["head.json"],
        "proof": files["proof.json"],
        "note": files["note.txt"],
        "vkey": files["vkey.txt"],
        "public": files["public.keys"],
        "other": str(folder / "other.keys"),
        "bundle": str(folder / "bundle.json"),
        "tampered": str(folder / "tampered.json"),
        "adir": str(folder / "adir"),
        "notdb": str(folder / "notdb" / "x.sqlite"),
        "absent": str(folder / "absent"),
    }


@pytest.fixture
def quiet_cli(no_store_settings: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No setting of the machine's (store, wallet, keys) reaches the command, nothing waits on standard input, and
    the logging a command sets up (``serve``) is put back after it."""
    for name in ("POKDENG_WALLET", "POKDENG_WALLET_URL", "POKDENG_SIGNING_KEY", "POKDENG_SIGNING_KEY_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for handler in [h for h in root.handlers if h not in handlers]:
        root.removeHandler(handler)
        handler.close()
    for handler in [h for h in handlers if h not in root.handlers]:
        root.addHandler(handler)
    root.setLevel(level)


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        code = main(argv)
    except SystemExit as done:  # (argparse: its usage and one line, "pokdeng ...: error: ...")
        code = int(done.code or 0)
    printed = capsys.readouterr()
    return code, printed.out, printed.err


def _check(argv: list[str], expected: int, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(argv, capsys)
    shown = f"pokdeng {shlex.join(argv)}: exit {code}\nout: {out[-600:]}\nerr: {err[-600:]}"
    assert code == expected, shown
    assert "Traceback" not in err, shown
    if expected in (2, 3, 4):  # said on standard error, in one line that names pokdeng; nothing on standard output
        lines = [line for line in err.splitlines() if line.strip()]
        assert lines and lines[-1].startswith("pokdeng"), shown
        assert out == "", shown


def test_every_command_has_its_cases() -> None:
    """A new command needs its row: what its bad usage, its refusals and an unreachable store exit."""
    assert set(CASES) == set(LEAVES), (
        f"commands without cases: {sorted(set(LEAVES) - set(CASES))}; cases of no command: "
        f"{sorted(set(CASES) - set(LEAVES))}"
    )
    assert [c for c, cases in CASES.items() if not any(code == 2 for _args, code in cases)] == []
    # every command that opens a store says so of one it cannot reach (4), a PostgreSQL server that does not answer
    stored = [c for c in LEAVES if "--postgres-url" in _options(c)]
    assert [c for c in stored if not any(code == 4 and PG in args for args, code in CASES[c])] == []


def _options(command: tuple[str, ...]) -> set[str]:
    parser = build_parser()
    for word in command:
        group = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = group.choices[word]
    return {option for action in parser._actions for option in action.option_strings}


@pytest.mark.parametrize(
    ("command", "args", "expected"),
    [(command, args, code) for command, cases in CASES.items() for args, code in cases],
    ids=lambda value: " ".join(value) if isinstance(value, tuple) else str(value),
)
def test_exit_code(
    command: tuple[str, ...],
    args: str,
    expected: int,
    evidence: dict[str, str],
    quiet_cli: None,
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = [*command, *shlex.split(args.format(**evidence))]
    try:
        _check(argv, expected, capsys)
    finally:  # (what a case may make beside the evidence: a backup, a restored store, an output folder)
        for name in ("backup.sqlite", "restored.sqlite", "page.html", "verifier.html"):
            Path(evidence["folder"], name).unlink(missing_ok=True)
        shutil.rmtree(Path(evidence["folder"], "no-such-folder"), ignore_errors=True)


@pytest.mark.parametrize("command", sorted(LEAVES), ids=" ".join)
def test_an_unknown_option_or_a_missing_argument_is_bad_usage(
    command: tuple[str, ...], quiet_cli: None, capsys: pytest.CaptureFixture[str]
) -> None:
    _check([*command, "--no-such-option"], 2, capsys)
    if LEAVES[command]:
        _check(list(command), 2, capsys)


def test_the_readme_lists_every_code_the_commands_exit_with() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    table = readme.split("| exit | when |", 1)[1].split("\n\n", 1)[0]
    listed = {int(line.split("|")[1]) for line in table.splitlines()[2:]}
    assert {code for cases in CASES.values() for _args, code in cases} <= listed == {0, 1, 2, 3, 4, 5, 141}
