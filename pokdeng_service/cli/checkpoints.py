"""``pokdeng keys`` and ``pokdeng checkpoints``: signing keys, signed tree heads and their proofs.

* ``pokdeng keys new|show|rotate``: the signing key file (``StoreConfig.signing_key_path``:
  ``--key-file``, ``$POKDENG_SIGNING_KEY_FILE`` or ``<db>.signing-keys``); ``show`` prints the
  public keys (``KEY_ID PUBLIC_HEX``, the form ``--key`` reads), never a private key.
* ``pokdeng checkpoints sign|show|prove``: sign a tree head over a store's log of closed rounds,
  print the latest one, print a consistency proof between two tree sizes.
* ``pokdeng checkpoints check OLD NEW PROOF --key K``: offline, that the newer head's log
  extends the older one's; ``pokdeng checkpoints audit --key K``: a store's whole log. With ``--json``
  (and ``verify-note --json``) one object, as ``pokdeng verify --json`` prints it (``output.verdicts_json``):
  every verdict, ``passed`` and ``failed``, and the exit code; ``audit``'s verdicts name their partition.
* ``pokdeng keys show --json``: the public keys in the key file's own form, with no private half (what
  ``--key`` reads too).
* C2SP checkpoints (docs/checkpoints.md, "Checkpoints"): ``pokdeng checkpoints note`` prints a
  head as its signed note (``sign --note`` signs one and prints it so); ``pokdeng checkpoints
  vkey`` prints the log's verifier keys (``<origin>+<key hash>+<base64 key>``); ``pokdeng
  checkpoints verify-note FILE --key VKEY`` checks a note offline, as Go's ``note.Open`` does;
  ``pokdeng checkpoints witness-request OLD`` prints a witness's ``add-checkpoint`` request body.

Exit codes as the rest of the CLI: 0 verified (without ``--key``: with an "unanchored"
warning), 1 a check failed (with ``--key``: a head missing, or a signature that does not
verify), 2 bad usage or input, 3 refused (no signing key, an empty log).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pokdeng_service.cli.common import config_of, open_read_only
from pokdeng_service.cli.output import output_file, verdicts_json, write_output

if TYPE_CHECKING:
    from pokdeng_service.audit.verdicts import Verdict
    from pokdeng_service.store.signing import PublicKeys

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2

StoreOptions = Callable[[argparse.ArgumentParser], None]
JSON_HELP = "print one JSON object, as verify --json does: every verdict (its checks), the tallies and the exit code"


def public_keys(values: list[str] | None) -> PublicKeys | None:
    """The public keys of every ``--key`` (a key's hex, or a file of keys), or None without any."""
    if not values:
        return None
    from pokdeng_service.store.signing import PublicKeys

    keys = PublicKeys()
    for value in values:
        keys = keys.merge(PublicKeys.load(value))
    return keys


def _key_path(args: argparse.Namespace) -> Path:
    if args.key_file:
        return Path(args.key_file)
    from pokdeng_service.application.config import StoreConfig

    return StoreConfig.from_args(db=args.db).signing_key_path()


def _write(text: str, output: str | None) -> None:
    if output in (None, "-"):
        print(text, end="")
    else:
        write_output(output_file(output), text)
        print(f"wrote {output}")


def _verdicts(args: argparse.Namespace, verdicts: list[tuple[Verdict, dict[str, Any]]]) -> int:
    """Say the verdicts (each with what its command adds to its JSON, as its partition): as text, or with
    ``--json`` as ``verify --json`` does; to ``--output`` if the command has one. 0 if every one passed, else 1."""
    failed = sum(not verdict.ok for verdict, _extra in verdicts)
    code = EXIT_FAILED if failed else EXIT_OK
    if getattr(args, "json", False):
        found = [{**verdict.as_dict(), **extra} for verdict, extra in verdicts]
        text = verdicts_json(found, code, passed=len(verdicts) - failed, failed=failed)
    else:
        text = "\n".join(verdict.render() for verdict, _extra in verdicts) + "\n"
    _write(text, getattr(args, "output", None))
    return code


def _output_checked(handler: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """``handler`` with its ``--output`` checked first (``output_file``): no head is signed whose file
    cannot be written."""

    def run(args: argparse.Namespace) -> int:
        if getattr(args, "output", None) not in (None, "-"):
            output_file(args.output)
        return handler(args)

    return run


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True) + "\n"


def cmd_keys(args: argparse.Namespace) -> int:
    from pokdeng_service.store.signing import KEYS_FORMAT, KEYS_VERSION, KeyRing

    path = _key_path(args)
    if args.action == "new":
        if args.key_file:  # (named: a folder that does not exist is bad usage; the store's default is made with it)
            output_file(args.key_file)
        ring = KeyRing()
        key = ring.rotate()
        ring.save(path, new=True)
        print(f"new signing key {key.key_id} in {path} (mode 0600; keep it out of the database and its backups)")
    elif args.action == "rotate":
        ring = KeyRing.from_file(path)
        old = ring.current.key_id if ring.current else "none"
        key = ring.rotate()
        ring.save(path)
        print(f"rotated: {key.key_id} signs from now on (restart the server); {old} is retired, its public key kept")
    else:
        ring = KeyRing.from_file(path)
    lines = "".join(line + "\n" for line in ring.describe())
    if args.action == "show" and args.json:  # (the key file's own form, every private half left out)
        public = [{k: v for k, v in entry.items() if k != "private_key"} for entry in ring.entries]
        current = ring.current.key_id if ring.current else None
        data = {"format": KEYS_FORMAT, "format_version": KEYS_VERSION, "current": current, "keys": public}
        _write(_json(data), args.output)
    elif args.action == "show" and args.output:
        _write("# pokdeng signing keys (public): KEY_ID PUBLIC_KEY\n" + lines, args.output)
    else:
        print(lines, end="")
    return EXIT_OK


def _open(args: argparse.Namespace, *, write: bool = False) -> Any:
    """The store: to sign (with the signing keys), or read only (nothing created, no key read)."""
    import dataclasses

    from pokdeng_service.application.partitions import PartitionedPokdeng
    from pokdeng_service.store.readonly import sqlite_uri

    if not write:
        return open_read_only(args)
    config = config_of(args)  # (the vault key file too: a PostgreSQL store needs it to be opened to write)
    if config.kind == "sqlite":  # signing writes to a store that exists: a mistyped path creates none
        for k in range(config.partitions):
            sqlite_uri(config.sqlite_file(k))  # (StoreUnavailable: "no such database", exit 4)
    if args.key_file:
        config = dataclasses.replace(config, signing_key_file=args.key_file)
    return PartitionedPokdeng.open(config)


def _store_key(shard: str) -> str:
    return f"{shard}/" if shard else ""


def cmd_sign(args: argparse.Namespace) -> int:
    import uuid

    from pokdeng_service.application.commands import SignTreeHead
    from pokdeng_service.application.principal import SYSTEM
    from pokdeng_service.store.roundlog import HEAD_SIGNED
    from pokdeng_service.store.signing import TreeHead

    service = _open(args, write=True)
    try:
        result = service.handle(SYSTEM, f"cli-sign-{uuid.uuid4().hex}", SignTreeHead(args.shard))
    finally:
        service.close()
    data = next(e.data for e in result.events if e.kind == HEAD_SIGNED)
    fields = {k: v for k, v in data.items() if k != "time_ms"}
    head = TreeHead.from_dict({**fields, "timestamp": data["time_ms"]})
    _write(str(data["note"]) if args.note else _json(head.as_dict()), args.output)
    return EXIT_OK


def cmd_note(args: argparse.Namespace) -> int:
    from pokdeng_service.application.errors import NotFound

    service = _open(args)
    try:
        head, note = service.app_for(_store_key(args.shard), "log").tree_head_note(args.size)
    finally:
        service.close()
    if not note:
        raise NotFound(
            f"the head of size {head.tree_size} was signed before heads had checkpoint notes: sign a new head "
            "(`pokdeng checkpoints sign --note`)"
        )
    _write(note, args.output)
    return EXIT_OK


def cmd_witness_request(args: argparse.Namespace) -> int:
    """The body of a C2SP tlog-witness ``add-checkpoint`` request: ``old <size>``, the consistency proof from that
    size (one base64 hash a line; none from 0 or from the same size), an empty line, then the head's note."""
    import base64

    from pokdeng_service.application.errors import NotFound

    service = _open(args)
    try:
        app = service.app_for(_store_key(args.shard), "log")
        head, note = app.tree_head_note(args.size)
        path = app.consistency_proof(args.old, head.tree_size)["path"] if args.old else []
    finally:
        service.close()
    if not note:
        raise NotFound(f"the head of size {head.tree_size} was signed before heads had checkpoint notes")
    lines = [f"old {args.old}", *(base64.b64encode(bytes.fromhex(h)).decode() for h in path)]
    _write("".join(line + "\n" for line in lines) + "\n" + note, args.output)
    return EXIT_OK


def cmd_vkey(args: argparse.Namespace) -> int:
    from pokdeng_service.store import notes
    from pokdeng_service.store.signing import KeyRing

    keys = public_keys(args.key) or KeyRing.from_file(_key_path(args)).public
    service = _open(args)
    try:
        app = service.app_for(_store_key(args.shard), "log")
        log = app.read_log()
        prefix = app.log_origin_prefix()
    finally:
        service.close()
    if not log.log_id:
        raise ValueError("no round has closed in this store yet: its log has no id, so no origin")
    noted = [log.notes[p] for p, _head in log.heads if p in log.notes]
    origin = noted[-1].split("\n", 1)[0] if noted else notes.origin_of(prefix, log.log_id)
    lines = [f"# verifier keys of the log {log.log_id}, origin {origin} (one per signing key)"]
    lines += [f"{notes.Verifier(origin, bytes.fromhex(keys.hex(key_id)))}  # key {key_id}" for key_id in keys]
    _write("\n".join(lines) + "\n", args.output)
    return EXIT_OK


def cmd_verify_note(args: argparse.Namespace) -> int:
    from pokdeng_service.audit.anchors import verify_note
    from pokdeng_service.store.notes import Verifier, parse_verifiers

    verifiers: list[Verifier] = []
    for value in args.key:
        path = Path(value)
        if "+" not in value and path.exists():
            try:
                verifiers += parse_verifiers(path.read_text(encoding="utf-8"))
            except OSError as error:
                raise ValueError(f"cannot read {value}: {error.strerror or error}") from None
        else:
            verifiers.append(Verifier.parse(value))
    try:
        raw = Path(args.note).read_bytes()
    except OSError as error:
        raise ValueError(f"cannot read {args.note}: {error.strerror or error}") from None
    return _verdicts(args, [(verify_note(raw, verifiers, args.origin or ""), {})])


def cmd_show(args: argparse.Namespace) -> int:
    service = _open(args)
    try:
        head = service.app_for(_store_key(args.shard), "log").tree_head(args.size)
    finally:
        service.close()
    _write(_json(head.as_dict()), args.output)
    return EXIT_OK


def cmd_prove(args: argparse.Namespace) -> int:
    service = _open(args)
    try:
        proof = service.app_for(_store_key(args.shard), "log").consistency_proof(args.first, args.second)
    finally:
        service.close()
    _write(_json(proof), args.output)
    return EXIT_OK


def _read_json(name: str) -> Any:
    try:
        return json.loads(Path(name).read_text(encoding="utf-8"))
    except OSError as error:
        raise ValueError(f"cannot read {name}: {error.strerror or error}") from None
    except json.JSONDecodeError as error:
        raise ValueError(f"{name} is not JSON: {error}") from None


def cmd_check(args: argparse.Namespace) -> int:
    from pokdeng_service.audit.anchors import verify_consistency

    verdict = verify_consistency(
        _read_json(args.old), _read_json(args.new), _read_json(args.proof), public_keys(args.key)
    )
    return _verdicts(args, [(verdict, {})])


def cmd_audit(args: argparse.Namespace) -> int:
    """Every partition's log (``audit_log``), a verdict each; ``--json``: each names its ``partition``."""
    from pokdeng_service.audit.anchors import audit_log

    keys = public_keys(args.key)
    service = _open(args)
    verdicts = []
    try:
        for k, app in enumerate(service.apps):
            verdict = audit_log(app, keys, subject=f"log of partition {k}" if len(service.apps) > 1 else "")
            verdicts.append((verdict, {"partition": k}))
    finally:
        service.close()
    return _verdicts(args, verdicts)


def add_checkpoint_commands(sub: Any, store_options: StoreOptions) -> None:
    """Register ``keys`` and ``checkpoints`` on the ``pokdeng`` subparsers."""
    _add_key_commands(sub)
    checkpoints = sub.add_parser("checkpoints", help="signed tree heads over a store's log of closed rounds")
    actions = checkpoints.add_subparsers(dest="action", required=True)
    for name, help_text, handler, store, options in CHECKPOINT_COMMANDS:
        parser = actions.add_parser(name, help=help_text)
        if store is None:  # offline: files and keys only
            parser.set_defaults(handler=handler)
        else:
            if store == "shard":
                parser.add_argument("--shard", default="", help="the store: its ids' shard (default: ids without one)")
            parser.add_argument("-o", "--output", help="file (default: standard output)")
            store_options(parser)
            parser.set_defaults(handler=_output_checked(handler))
        options(parser)


def _add_key_commands(sub: Any) -> None:
    """``keys new|show|rotate``: each with the key file and the store it sits beside; ``show`` with its output."""
    keys = sub.add_parser("keys", help="the signing keys of signed tree heads: new, show, rotate")
    key_actions = keys.add_subparsers(dest="action", required=True, metavar="ACTION")
    for name, help_text in (
        ("new", "make the key file with one new signing key (mode 0600; never overwrites one)"),
        ("show", "print the public keys (KEY_ID PUBLIC_KEY), for auditors and the pages' --key"),
        ("rotate", "a new current key; the old ones are kept for verifying (restart the server after)"),
    ):
        action = key_actions.add_parser(name, help=help_text, description=help_text[0].upper() + help_text[1:] + ".")
        action.add_argument(
            "--key-file", help="the key file (default: $POKDENG_SIGNING_KEY_FILE, or <db>.signing-keys)"
        )
        action.add_argument("--db", help="the SQLite file the default key file sits beside (default: pokdeng.sqlite)")
        if name == "show":
            action.add_argument("-o", "--output", help="write the public keys to this file (for auditors)")
            action.add_argument(
                "--json", action="store_true", help="the public keys as JSON: the key file's form, no private half"
            )
        action.set_defaults(handler=cmd_keys, output=None, json=False)


def _signing_key_file(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--key-file", help="the signing key file (default: $POKDENG_SIGNING_KEY_FILE, or <db>.signing-keys)"
    )


def _latest_size(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--size", type=int, default=0, help="the latest head of this tree size (default: the latest)")


def _sign_options(sign: argparse.ArgumentParser) -> None:
    _signing_key_file(sign)
    sign.add_argument("--note", action="store_true", help="print the head as its C2SP checkpoint note, not JSON")


def _witness_request_options(witness: argparse.ArgumentParser) -> None:
    witness.add_argument("old", type=int, help="the size of the last checkpoint the witness cosigned (0: none)")
    witness.add_argument("--size", type=int, default=0, help="the head to submit (default: the latest)")


def _vkey_options(vkey: argparse.ArgumentParser) -> None:
    vkey.add_argument("--key", action="append", help="public key (hex) or key file (default: the signing key file's)")
    _signing_key_file(vkey)


def _verify_note_options(verify_note: argparse.ArgumentParser) -> None:
    verify_note.add_argument("note", help="the note (a file of `checkpoints note`)")
    verify_note.add_argument(
        "--key", action="append", required=True, help="a verifier key (<name>+<hash>+<key>), or a file of them"
    )
    verify_note.add_argument("--origin", help="the origin the note must name (default: any)")
    verify_note.add_argument("--json", action="store_true", help=JSON_HELP)


def _prove_options(prove: argparse.ArgumentParser) -> None:
    prove.add_argument("first", type=int, help="the older (smaller) tree size")
    prove.add_argument("second", type=int, nargs="?", default=0, help="the newer tree size (default: the log's)")


def _check_options(check: argparse.ArgumentParser) -> None:
    check.add_argument("old", help="the older signed head (JSON file)")
    check.add_argument("new", help="the newer signed head (JSON file)")
    check.add_argument("proof", help="the consistency proof between them (JSON file of `checkpoints prove`)")
    check.add_argument("--key", action="append", help="public key (hex) or key file; repeat for several")
    check.add_argument("--json", action="store_true", help=JSON_HELP)


def _audit_options(audit: argparse.ArgumentParser) -> None:
    audit.add_argument("--key", action="append", help="public key (hex) or key file; repeat for several")
    audit.add_argument("--json", action="store_true", help=JSON_HELP + " (each verdict with its partition)")


# ``checkpoints``' actions, in the order of its --help: name, help, handler, the store it reads ("shard": a
# store and its ids' shard, "whole": every partition's log, None: offline, files and keys only; a command of a
# store also has -o/--output, checked before it runs), and its own options.
CHECKPOINT_COMMANDS: tuple[
    tuple[str, str, Callable[[argparse.Namespace], int], str | None, Callable[[argparse.ArgumentParser], None]], ...
] = (
    ("sign", "sign a tree head over the log now (operator)", cmd_sign, "shard", _sign_options),
    ("note", "print the latest signed head as a C2SP checkpoint (a signed note)", cmd_note, "shard", _latest_size),
    ("witness-request", "print a C2SP tlog-witness add-checkpoint body: old size, proof, note", cmd_witness_request,
     "shard", _witness_request_options),
    ("vkey", "print the log's C2SP verifier keys (what verify-note and Go's note read)", cmd_vkey, "shard",
     _vkey_options),
    ("verify-note", "offline: a C2SP checkpoint note's signature and form", cmd_verify_note, None,
     _verify_note_options),
    ("show", "print the latest signed tree head", cmd_show, "shard", _latest_size),
    ("prove", "print the consistency proof between two tree sizes", cmd_prove, "shard", _prove_options),
    ("check", "offline: the newer head's log extends the older one's", cmd_check, None, _check_options),
    ("audit", "check every store's log: leaves, rounds, heads, signatures", cmd_audit, "whole", _audit_options),
)  # fmt: skip
