"""The ``pokdeng`` command: serve, demo, replay, verifier-page, verify, export, recall, keys, checkpoints,
rtp, rng-report, math-report, backup, restore, rebuild-read-models; ``pokdeng --version``.

Exit codes: 0 success; 1 a verification failed; 2 bad usage or input; 3 not found
or refused by the rules; 4 the store or server could not be reached; 5 a bundle passed every
check but nothing anchors it (``verify`` without ``--key``: UNANCHORED).

The audit tools (``replay``, ``verify``, ``export``, ``recall``) open the store read only
(``PartitionedPokdeng.open_read_only``): they create nothing (a wrong ``--db`` is "no such
database", exit 4), and read the vault key only when an open round's seed is needed.

``pokdeng verify BUNDLE...`` (docs/audit.md, "Verdicts and exit codes"): every file gets a verdict, whatever
it holds (a file that cannot be read is said and the others are still checked): PASS, FAIL naming the
failed checks, or UNANCHORED: every check passed, but no signed tree head was checked to cover the round
(no ``--key``, or a bundle without a head), so nothing outside the file vouches for its events. The
exit code is 1 if any file failed, else 2 if any could not be read, else 5 if any is unanchored
(0 with ``--allow-unanchored``, the warning still printed), else 0. With ``--key``, a bundle with no
signed head, or whose head's signature does not verify with the keys given, fails.

Starting is light: this module and what builds the parser (``checkpoints``, ``stores``, ``wallet``,
``rtp``, ``certify``, ``serve_flags``, ``output``) import no store, application, server, pydantic, numpy or rich at
import time; each command imports what it uses when it runs. ``--version`` and every ``--help`` load
nothing heavy (tests/cli/test_startup.py), and ``verify BUNDLE`` loads only the offline verifier.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import gc
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from pokdeng_service.cli.auth import add_auth_commands
from pokdeng_service.cli.certify import add_certification_commands
from pokdeng_service.cli.checkpoints import add_checkpoint_commands, public_keys
from pokdeng_service.cli.output import EXIT_SIGPIPE, output_file
from pokdeng_service.cli.rtp import add_rtp_commands
from pokdeng_service.cli.serve_flags import add_serve_flags
from pokdeng_service.cli.stores import add_store_commands, partition_file
from pokdeng_service.cli.wallet import add_wallet_commands

if TYPE_CHECKING:
    from pokdeng_service.application.config import StoreConfig

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_REFUSED, EXIT_UNAVAILABLE, EXIT_UNANCHORED = 0, 1, 2, 3, 4, 5
ROUND_HELP = "the round's id, TABLE#N: the table's id, '#' and the round's number (quote it in a shell: 'demo#1')"


def version_text() -> str:
    """What ``pokdeng --version`` prints: the package's version (``pokdeng_service.version``, the one place),
    the engine's, the shuffle's algorithm and the bundle's format, a line each (the first ``pokdeng X``)."""
    from pokdeng_core.catalog import ENGINE_VERSION, SHUFFLE_ALGORITHM
    from pokdeng_service.version import BUNDLE_FORMAT, BUNDLE_VERSION, __version__

    return "\n".join(
        (
            f"pokdeng {__version__}",
            f"engine {ENGINE_VERSION}",
            f"shuffle {SHUFFLE_ALGORITHM}",
            f"bundle {BUNDLE_FORMAT} v{BUNDLE_VERSION}",
        )
    )


class _VersionAction(argparse.Action):
    """``--version``: ``version_text()``, on standard output, then exit 0 (read when asked, not when the
    parser is built; printed as is, where argparse's own action would rewrap it)."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, help: str | None = None) -> None:
        super().__init__(option_strings, dest=dest, default=argparse.SUPPRESS, nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, *_args: Any, **_kwargs: Any) -> NoReturn:
        print(version_text())
        parser.exit()


def _store_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("event store")
    group.add_argument("--db", help="SQLite file (default: pokdeng.sqlite, or $POKDENG_DB)")
    group.add_argument(
        "--postgres-url", help="PostgreSQL URL postgresql://user:pw@host:port/db ($POKDENG_POSTGRES_URL)"
    )
    group.add_argument("--partitions", type=int, default=1, help="event stores to spread tables over (default 1)")
    group.add_argument(
        "--partition-url", action="append", metavar="K=URL",
        help="partition K's PostgreSQL URL, once per partition (each may be its own server; $POKDENG_PARTITION_URLS)",
    )  # fmt: skip
    group.add_argument(
        "--vault-key-file", help="the vault key file ($POKDENG_VAULT_KEY_FILE; SQLite default: <db>.vault-key)"
    )


def _config(args: argparse.Namespace) -> StoreConfig:
    from pokdeng_service.application.config import StoreConfig

    return StoreConfig.from_args(
        db=args.db,
        postgres_url=args.postgres_url,
        partitions=args.partitions,
        vault_key_file=getattr(args, "vault_key_file", None),
        partition_urls=getattr(args, "partition_url", None),
    )


def _open(args: argparse.Namespace) -> Any:
    from pokdeng_service.application.partitions import PartitionedPokdeng

    return PartitionedPokdeng.open(_config(args))


def _open_read_only(args: argparse.Namespace) -> Any:
    """The store as evidence: read only, nothing created, no vault key unless an open round needs it."""
    from pokdeng_service.application.partitions import PartitionedPokdeng

    config = _config(args)
    if config.kind == "sqlite" and config.sqlite_path:
        beside = partition_file(Path(config.sqlite_path), config.partitions)
        if beside.exists():  # (a partition the command was not told of: it would be left unread)
            print(
                f"pokdeng: note: {beside} lies beside the store, a partition beyond the {config.partitions} "
                f"given: name every partition with --partitions",
                file=sys.stderr,
            )
    return PartitionedPokdeng.open_read_only(config)


def cmd_serve(args: argparse.Namespace) -> int:
    """Every flag also from the environment (``cli.settings.ServeSettings``, docs/operations.md).

    Before anything is written (the store's lock, its vault key, a development token printed), every
    setting is checked: the token file and the TLS files (their modes, the certificate's dates), the
    wallet's, and that both ports can be listened on (a port in use: exit 2)."""
    from pokdeng_service.logs import capture_stderr, configure_logging, quiet_grpc_core

    quiet_grpc_core()  # (before grpc is imported: no line per failed TLS handshake)
    from pokdeng_service.api.server import serve
    from pokdeng_service.cli.settings import ServeSettings
    from pokdeng_service.compose import Deployment
    from pokdeng_service.wallet.switch import check_switch

    settings = ServeSettings.from_args(args)
    options = settings.server_options()  # (checks the TLS settings before the store is opened)
    wallet = settings.wallet_config()  # (and the wallet's: an adapter, a URL it speaks)
    settings.check_ports()  # (a port in use: refused before any file is made)
    configure_logging(
        settings.log_format,
        settings.log_level,
        field_chars=settings.log_field_chars,
        buffer_lines=settings.log_buffer_lines,
        buffer_bytes=settings.log_buffer_bytes,
    )
    config = settings.store_config()
    deployment = Deployment.open(
        config,
        wallet=wallet,
        read_models=settings.read_models,
        log_format=settings.log_format,
        log_level=settings.log_level,
    )
    try:  # never on an adapter that cannot finish the money the store holds (docs/wallet.md, "Switching adapters")
        check_switch(deployment.service.apps, wallet, allow=settings.wallet_allow_unfinished)
    except BaseException:
        deployment.close()
        raise
    deployment.start()
    print(f"pokdeng: serving {config.describe()} on {settings.address}", flush=True)
    probes, recover = deployment.probes()
    # the gRPC core's own lines (fd 2) as records of the log, from now on (docs/operations.md, "Logs")
    captured = capture_stderr() if settings.grpc_core_log == "capture" else None
    try:
        code = serve(
            settings.address,
            deployment.target,
            grace=settings.shutdown_grace,
            read_models=deployment.read_models,
            probes=probes,
            recover=recover,
            **options,
        )
    finally:
        deployment.close()
        if captured is not None:
            captured.close()
        # A store a recovery replaced is closed by the garbage collector (its pool's __del__): do it now,
        # while the pool's threads still run. At interpreter exit they no longer do, and from Python 3.13
        # joining them there never returns (the server would hang after its shutdown).
        del probes, recover, deployment
        gc.collect()
    return int(code)


def cmd_demo(args: argparse.Namespace) -> int:
    from pokdeng_service.cli.demo import run_demo

    return run_demo(rounds=args.rounds, db=args.db, seed=args.seed)


def cmd_replay(args: argparse.Namespace) -> int:
    from pokdeng_service import audit
    from pokdeng_service.cli import replay_view

    page = output_file(args.html) if args.html else None
    keys = public_keys(args.key) if page is not None else None  # (a key that cannot be read: bad usage, first)
    app = _round_app(_open_read_only(args), args.round)
    view = app.get_round(args.round)
    if args.player is not None:  # a --player the round does not concern: bad usage, before anything is printed
        from pokdeng_service.application.access import participants

        if args.player not in participants(view):
            print(
                f"pokdeng replay: {args.player!r} has no seat, stake or banker's role in round {view.round_id}",
                file=sys.stderr,
            )
            return EXIT_USAGE
    verdict = audit.verify_round(app, args.round, check_wallets=True)
    print(replay_view.text(view))
    print()
    print(verdict.render())
    if page is not None:
        replay_view.write_dispute_page(app, view, verdict, page, keys, args.player)
        print(f"\nwrote {args.html}: the dispute page (docs/dispute.md); a browser checks the round there too")
    return EXIT_OK if verdict.ok else EXIT_FAILED


def _round_app(app: Any, round_id: str) -> Any:
    """The application of the partition a round lives in (the partition of its table's shard). A round id is
    ``TABLE#N``: anything else is a usage error (exit 2), not a round the store lacks."""
    table, _, number = round_id.rpartition("#")
    if not table or not number.isdigit() or int(number) < 1:
        raise ValueError(f"{round_id!r} is not a round id: {ROUND_HELP}")
    return app.app_for(round_id, "round") if hasattr(app, "app_for") else app


def cmd_verifier_page(args: argparse.Namespace) -> int:
    from pokdeng_service.cli import replay_view

    replay_view.write_verifier_page(output_file(args.output), public_keys(args.key))
    print(f"wrote {args.output}: open it in a browser and choose a bundle file to check it there (docs/dispute.md)")
    return EXIT_OK


class _Verdicts:
    """Where ``verify`` says its verdicts: as text (each verdict, or the failures only: ``--quiet``; ``--all``
    prints its passes only with ``--verbose``, else a one-line tally), or with ``--json`` one JSON object at the
    end, for a machine: every verdict (``Verdict.as_dict``, with the file of a bundle), the tallies and the exit
    code. A failure is always said."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.json = bool(getattr(args, "json", False))
        self.quiet = bool(args.quiet)
        self.verbose = bool(getattr(args, "verbose", False))
        self.found: list[dict[str, Any]] = []
        self.summary: dict[str, Any] = {}

    def say(self, verdict: Any, label: str = "", *, bulk: bool = False) -> None:
        """One verdict: ``label`` before it (a bundle's file, a partition); ``bulk``: one of ``--all``'s many."""
        if self.json:
            self.found.append({**verdict.as_dict(), **({"where": label} if label else {})})
            return
        passed = verdict.status == "PASS"
        if not passed or self.verbose or (not bulk and not self.quiet):
            print(f"{label}: {verdict.render()}" if label else verdict.render())

    def line(self, text: str, **counts: Any) -> None:
        """A summary line (text), or its counts (JSON)."""
        if self.json:
            self.summary.update(counts)
        else:
            print(text)

    def done(self, code: int) -> int:
        if self.json:
            print(json.dumps({"verdicts": self.found, **self.summary, "exit_code": code}, indent=2))
        return code


def cmd_verify(args: argparse.Namespace) -> int:
    # A bundle is named by --bundle or as a file (`pokdeng verify round.json`): it is checked
    # offline, with no server or database; anything else is a round id in the store.
    out = _Verdicts(args)
    bundles = [args.bundle] if args.bundle else []
    bundles += [name for name in args.rounds if name.endswith(".json") or Path(name).is_file()]
    rounds = [name for name in args.rounds if name not in bundles]
    keys = public_keys(args.key) if bundles else None  # (a key that cannot be read: bad usage, before any file)
    if not bundles and not rounds and not args.all:
        print("nothing to verify: name a ROUND, a bundle FILE, or --all", file=sys.stderr)
        return EXIT_USAGE
    tally = _verify_bundles(bundles, keys, out)
    failed = tally["FAIL"]
    if bundles and not rounds and not args.all:
        if len(bundles) > 1 or out.json:
            out.line(
                ", ".join(f"{tally[k]} {k.lower()}" for k in ("PASS", "UNANCHORED", "FAIL", "unreadable")),
                bundles={k.lower(): v for k, v in tally.items()},
            )
        return out.done(_bundles_exit(tally, args.allow_unanchored))
    from pokdeng_service import audit
    from pokdeng_service.audit.table_pins import TablePins
    from pokdeng_service.cli.progress import Progress

    app = _open_read_only(args)
    passed = tally["PASS"] + tally["UNANCHORED"]
    if args.all:
        code = _verify_all(app, out, passed, failed, _config(args))
        return out.done(code if code != EXIT_OK else _bundles_exit(tally, args.allow_unanchored))
    pins: dict[int, TablePins] = {}  # one reader per partition, shared over the run
    with Progress("verifying rounds", len(rounds)) as bar:
        for round_id in rounds:
            part = _round_app(app, round_id)
            reader = pins.setdefault(id(part), TablePins(part))
            verdict = audit.verify_round(part, round_id, check_wallets=True, pins=reader)
            out.say(verdict)
            failed += not verdict.ok
            bar.advance()
    checked = len(rounds) + passed + tally["FAIL"]
    out.line(f"{checked - failed} passed, {failed} failed", passed=checked - failed, failed=failed)
    return out.done(EXIT_FAILED if failed else _bundles_exit(tally, args.allow_unanchored))


def _verify_bundles(names: Sequence[str], keys: Any, out: _Verdicts) -> dict[str, int]:
    """Each bundle file's verdict, said (``--quiet``: the failures only): every file of the batch is checked,
    whatever the others hold; one that cannot be read is said on standard error. The count of each verdict
    (``PASS``, ``UNANCHORED``, ``FAIL``) and of the files that could not be read (``unreadable``)."""
    tally = dict.fromkeys(("PASS", "UNANCHORED", "FAIL", "unreadable"), 0)
    if not names:
        return tally
    from pokdeng_service.audit.bundle import verify_bundle  # (offline: no store, application or server)
    from pokdeng_service.audit.verdicts import Verdict
    from pokdeng_service.cli.progress import Progress

    with Progress("verifying bundles", len(names)) as bar:
        for name in names:
            bar.advance()
            try:
                raw = Path(name).read_bytes()
            except OSError as error:
                print(f"cannot read bundle {name}: {error.strerror or error}", file=sys.stderr)
                tally["unreadable"] += 1
                if out.json:
                    out.found.append({"where": name, "status": "unreadable", "ok": False, "error": str(error)})
                continue
            try:
                verdict = verify_bundle(raw, keys=keys)
            except Exception as error:  # (verify_bundle never raises; were it to, the batch still goes on)
                verdict = Verdict(f"bundle {name}")
                verdict.add("form", False, f"the bundle could not be checked: {type(error).__name__}: {error}")
            out.say(verdict, name if len(names) > 1 or out.json else "")
            tally[verdict.status] += 1
    return tally


def _bundles_exit(tally: dict[str, int], allow_unanchored: bool) -> int:
    """1 if a bundle failed, else 2 if one could not be read, else 5 if one is unanchored (0 when allowed), else 0."""
    if tally["FAIL"]:
        return EXIT_FAILED
    if tally["unreadable"]:
        return EXIT_USAGE
    return EXIT_UNANCHORED if tally["UNANCHORED"] and not allow_unanchored else EXIT_OK


def _verify_all(app: Any, out: _Verdicts, passed: int, failed: int, config: StoreConfig) -> int:
    """``verify --all``: every stream of every partition (``audit.verify_store``) and its read models against
    the record (``audit.views``): each failure said (every verdict with ``--verbose``), a progress bar on a
    terminal's standard error while the log is read; then the closed rounds' tally (with the bundles named) and
    the tally of everything else (open rounds, tables, wallets, seeds, command records, the store, the read
    models)."""
    from pokdeng_service import audit
    from pokdeng_service.cli.progress import Progress

    others: dict[str, list[int]] = {}
    sizes = [int(getattr(part, "max_position", 0) or 0) for part in app.apps]
    with Progress("verifying the store (events read)", sum(sizes)) as bar:
        for partition, part in enumerate(app.apps):
            read = functools.partial(lambda before, position: bar.update(before + position), sum(sizes[:partition]))
            verdicts = audit.verify_store(part, partition=partition, partitions=len(app.apps), progress=read)
            for verdict in [*verdicts, _read_models_verdict(config, part, partition)]:
                out.say(verdict, f"[partition {partition}]" if len(app.apps) > 1 else "", bulk=True)
                kind = verdict.subject.split(" ", 1)[0]
                if kind == "round" and not verdict.subject.endswith("(open)"):
                    passed += verdict.ok
                    failed += not verdict.ok
                else:
                    name = {"round": "open rounds", "table": "tables", "wallet": "wallets"}.get(kind, verdict.subject)
                    tally = others.setdefault(name, [0, 0])
                    tally[0 if verdict.ok else 1] += 1
    out.line(f"{passed} passed, {failed} failed", passed=passed, failed=failed)
    ok = sum(t[0] for t in others.values())
    bad = sum(t[1] for t in others.values())
    kinds = ", ".join(f"{name}: {t[0] + t[1]}" for name, t in others.items())
    out.line(
        f"store: {ok} passed, {bad} failed ({kinds})",
        store={
            "passed": ok,
            "failed": bad,
            "kinds": {name: {"passed": t[0], "failed": t[1]} for name, t in others.items()},
        },
    )
    return EXIT_OK if not failed and not bad else EXIT_FAILED


def cmd_export(args: argparse.Namespace) -> int:
    from pokdeng_service import audit

    target = None if args.output in (None, "-") else output_file(args.output)
    app = _round_app(_open_read_only(args), args.round)
    raw = audit.bundle_bytes(audit.export_bundle(app, args.round))
    if target is None:
        sys.stdout.write(raw.decode())
    else:
        target.write_bytes(raw)
        print(f"wrote {args.output} ({len(raw)} bytes)")
    return EXIT_OK


def cmd_recall(args: argparse.Namespace) -> int:
    from pokdeng_service.cli import replay_view

    config = _config(args)
    app = _open_read_only(args)
    key = args.table or args.player
    partition = app.partition(key, "table") if args.table else app.partition(key, "wallet")
    if args.table:  # a table the store lacks is not found (exit 3), not a table without rounds
        app.apps[partition].get_table(args.table)
    models = _recall_models(config, app.apps[partition], partition)
    try:
        summaries = models.last_rounds(table_id=args.table, player=args.player, limit=args.limit)
    finally:
        models.close()
    home = app.apps[partition]  # (the rounds recalled live in the partition of the table or player)
    views = [home.get_round(r.round_id) for r in summaries]
    left = [v for v in views if _recalled(v, args.table, args.player)]  # (the record decides, not a view row)
    if args.json:
        print(json.dumps([view.model_dump() for view in left], indent=2))
        return EXIT_OK
    for view in left:
        print(replay_view.text(view))
        print()
    print(f"{len(left)} round(s), oldest first")
    if len(left) < len(views):
        print(
            f"pokdeng: {len(views) - len(left)} round(s) the read models list are not in the record as asked: "
            "left out (pokdeng verify --all names the rows)",
            file=sys.stderr,
        )
    return EXIT_OK


def _recalled(view: Any, table_id: str | None, player: str | None) -> bool:
    """Whether the round's record gives it the table and the player a recall asked for."""
    from pokdeng_service.application.access import participants

    return (table_id is None or view.table_id == table_id) and (player is None or player in participants(view))


def _read_models_verdict(config: StoreConfig, app: Any, partition: int) -> Any:
    """The partition's stored read models against its record (``audit.views``); a store without them passes."""
    from pokdeng_service.audit.verdicts import Verdict
    from pokdeng_service.audit.views import verify_read_models
    from pokdeng_service.readmodels import ReadModels

    stored = None
    try:
        stored = ReadModels(config.read_only_env(partition))
        return verify_read_models(app, stored)
    except Exception as error:  # (no views in the store: it was never served)
        if not _store_error(error):
            raise
        verdict = Verdict("read models")
        verdict.add("position", True, "no read models in this store")
        return verdict
    finally:
        if stored is not None:
            stored.close()


def _recall_models(config: StoreConfig, app: Any, partition: int) -> Any:
    """The read models to recall from, writing nothing: the store's own views if they have every event
    of the log, else views folded in memory from the events."""
    from pokdeng_service.readmodels import ReadModels

    stored = None
    try:
        stored = ReadModels(config.read_only_env(partition))
        if stored.position(app.name) >= app.max_position:
            return stored
    except Exception as error:  # no views in the store (never served), or not readable: fold them
        if not _store_error(error):
            raise
    if stored is not None:
        stored.close()
    models = ReadModels({"PERSISTENCE_MODULE": "eventsourcing.popo"})
    models.catch_up(app)
    return models


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pokdeng", description="Pok Deng round engine and audit service")
    parser.add_argument(
        "--version", action=_VersionAction, help="print the version (and the engine's, the shuffle's, the bundle's)"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    serve = sub.add_parser(
        "serve", help="run the gRPC server (every flag also from $POKDENG_<FLAG>: docs/operations.md)"
    )
    _store_options(serve)
    add_serve_flags(serve)
    serve.set_defaults(handler=cmd_serve)

    demo = sub.add_parser("demo", help="play rounds of every profile through a real gRPC server, then verify one")
    demo.add_argument("--rounds", type=int, default=10, help="rounds per profile (default 10)")
    demo.add_argument(
        "--db", help="SQLite file to keep the demo's store in (default: pokdeng-demo.sqlite here, or the next free one)"
    )
    demo.add_argument("--seed", type=int, default=7, help="seed of the demo players' choices (default 7)")
    demo.set_defaults(handler=cmd_demo)

    replay = sub.add_parser("replay", help="show a round step by step and check it; --html: the dispute page")
    replay.add_argument("round", metavar="ROUND", help=ROUND_HELP)
    replay.add_argument(
        "--html", metavar="FILE", help="also write the round's dispute page: one HTML file that checks the round itself"
    )
    replay.add_argument(
        "--key", action="append", help="the operator's public key (hex) or key file, for the page to check the signed "
        "log's signature with; repeat for several",
    )  # fmt: skip
    replay.add_argument(
        "--player", metavar="ID", help="the page as this player may have it: its own balances only (its own bundle); "
        "in an open round its own cards and those shown to the table",
    )  # fmt: skip
    _store_options(replay)
    replay.set_defaults(handler=cmd_replay)

    verifier = sub.add_parser("verifier-page", help="write a page that checks any bundle file in the browser")
    verifier.add_argument("output", metavar="FILE", help="the HTML file to write")
    verifier.add_argument(
        "--key", action="append", help="the operator's public key (hex) or key file, filled in on the page (repeatable)"
    )
    verifier.set_defaults(handler=cmd_verifier_page)

    verify = sub.add_parser("verify", help="verify rounds (chain, replay, money) or an exported bundle offline")
    verify.add_argument("rounds", nargs="*", metavar="ROUND|BUNDLE", help="round ids, or bundle files (.json)")
    verify.add_argument(
        "--all", action="store_true", help="the whole store: every round, table and wallet stream, seeds, requests"
    )
    verify.add_argument("--bundle", help="a bundle file from `pokdeng export` (no server or database needed)")
    talk = verify.add_mutually_exclusive_group()
    talk.add_argument("--quiet", action="store_true", help="print failures only (and the tallies)")
    talk.add_argument(
        "--verbose", action="store_true", help="--all: print every verdict, not only the failures and the tallies"
    )
    talk.add_argument(
        "--json", action="store_true", help="print one JSON object: every verdict, the tallies and the exit code"
    )
    verify.add_argument(
        "--key", action="append", help="bundles: the operator's public key (hex) or key file; repeat for several"
    )
    verify.add_argument(
        "--allow-unanchored",
        action="store_true",
        help="bundles: exit 0, not 5, for a bundle whose checks pass but that no checked signed head anchors "
        "(its verdict still says UNANCHORED)",
    )
    _store_options(verify)
    verify.set_defaults(handler=cmd_verify)

    export = sub.add_parser("export", help="write a round's self-contained bundle (JSON)")
    export.add_argument("round", metavar="ROUND", help=ROUND_HELP)
    export.add_argument("-o", "--output", help="file (default: standard output)")
    _store_options(export)
    export.set_defaults(handler=cmd_export)

    recall = sub.add_parser("recall", help="the last rounds of a table or player, in play order")
    who = recall.add_mutually_exclusive_group(required=True)
    who.add_argument("--table", help="the table's id: its last rounds")
    who.add_argument("--player", help="a player's (wallet's) id: the last rounds it played")
    recall.add_argument("--limit", type=int, default=10, help="how many rounds (default 10)")
    recall.add_argument(
        "--json", action="store_true", help="print the rounds as JSON instead of text (amounts in minor units)"
    )
    _store_options(recall)
    recall.set_defaults(handler=cmd_recall)

    add_store_commands(sub, _store_options, _config)
    add_rtp_commands(sub)
    add_certification_commands(sub)
    add_checkpoint_commands(sub, _store_options)
    add_wallet_commands(sub, _store_options, _open_read_only)
    add_auth_commands(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args))
    except _loaded("pokdeng_service.application.errors", "NotFound") as error:
        print(f"pokdeng: {error}", file=sys.stderr)
        return EXIT_REFUSED
    except ValueError as error:  # (and application.config's ConfigError, a ValueError)
        print(f"pokdeng: {error}", file=sys.stderr)
        return EXIT_USAGE
    except _loaded("pokdeng_core.errors", "DomainError") as error:
        print(f"pokdeng: {error}", file=sys.stderr)
        return EXIT_REFUSED
    except BrokenPipeError:  # the reader went away (`pokdeng replay ... | head`): not the store
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # (no second error at exit)
        return EXIT_SIGPIPE
    except OSError as error:
        print(f"pokdeng: {error}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    except KeyboardInterrupt:
        return 130
    except Exception as error:
        # a vault key missing, unreadable or open to others: configuration
        if isinstance(error, _loaded("pokdeng_service.store.vault", "VaultError")):
            print(f"pokdeng: {error}", file=sys.stderr)
            return EXIT_USAGE
        if not _store_error(error):
            raise
        print(f"pokdeng: the store failed: {_one_line(error)}", file=sys.stderr)
        return EXIT_UNAVAILABLE


def _loaded(module: str, name: str) -> tuple[type[BaseException], ...]:
    """The exception class ``module.name`` if its module is loaded, else none (``except`` and ``isinstance``
    take either): an error of a module never imported cannot have been raised, and the CLI imports no
    module only to look at an error's class."""
    found = sys.modules.get(module)
    return (getattr(found, name),) if found is not None else ()


def _store_error(error: BaseException) -> bool:
    """An error of the event store (the library's, sqlite3's or psycopg's): the store is unavailable."""
    errors = (
        *_loaded("eventsourcing.persistence", "PersistenceError"),
        *_loaded("sqlite3", "Error"),
        *_loaded("psycopg", "Error"),
    )
    return isinstance(error, errors)


def _one_line(error: BaseException) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return "; ".join(lines) or type(error).__name__


if __name__ == "__main__":
    sys.exit(main())
