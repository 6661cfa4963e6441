"""The ``pokdeng`` command: serve, demo, replay, verify, export, recall, rtp.

Exit codes: 0 success; 1 a verification failed; 2 bad usage or input; 3 not found
or refused by the rules; 4 the store or server could not be reached.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pokdeng_core.errors import DomainError
from pokdeng_service.application.config import ConfigError, StoreConfig
from pokdeng_service.application.errors import NotFound

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_REFUSED, EXIT_UNAVAILABLE = 0, 1, 2, 3, 4


def _store_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("event store")
    group.add_argument("--db", help="SQLite file (default: pokdeng.sqlite, or $POKDENG_DB)")
    group.add_argument(
        "--postgres-url", help="PostgreSQL URL postgresql://user:pw@host:port/db ($POKDENG_POSTGRES_URL)"
    )
    group.add_argument("--partitions", type=int, default=1, help="event stores to spread tables over (default 1)")


def _config(args: argparse.Namespace) -> StoreConfig:
    return StoreConfig.from_args(db=args.db, postgres_url=args.postgres_url, partitions=args.partitions)


def _open(args: argparse.Namespace) -> Any:
    from pokdeng_service.application.partitions import PartitionedPokdeng

    return PartitionedPokdeng.open(_config(args))


def cmd_serve(args: argparse.Namespace) -> int:
    import logging

    from pokdeng_service.api.server import serve
    from pokdeng_service.compose import Deployment

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    config = _config(args)
    deployment = Deployment.open(config)
    deployment.start()
    address = f"{args.host}:{args.port}"
    print(f"pokdeng: serving {config.describe()} on {address}", flush=True)
    try:
        return int(
            serve(
                address,
                deployment.target,
                tokens=args.tokens,
                max_workers=args.workers,
                read_models=deployment.read_models,
            )
        )
    finally:
        deployment.close()


def cmd_demo(args: argparse.Namespace) -> int:
    from pokdeng_service.cli.demo import run_demo

    return run_demo(rounds=args.rounds, db=args.db, seed=args.seed)


def cmd_replay(args: argparse.Namespace) -> int:
    from pokdeng_service.cli import replay_view

    app = _open(args)
    view = app.get_round(args.round)
    verdict = app.verify_round(args.round)
    print(replay_view.text(view))
    print()
    print(verdict.render())
    if args.html:
        Path(args.html).write_text(replay_view.html_page(view, verdict.render(), verdict.ok), encoding="utf-8")
        print(f"\nwrote {args.html}")
    return EXIT_OK if verdict.ok else EXIT_FAILED


def cmd_verify(args: argparse.Namespace) -> int:
    from pokdeng_service import audit
    from pokdeng_service.audit.table_pins import TablePins

    # A bundle is named by --bundle or as a file (`pokdeng verify round.json`): it is checked
    # offline, with no server or database; anything else is a round id in the store.
    bundles = [args.bundle] if args.bundle else []
    bundles += [name for name in args.rounds if name.endswith(".json") or Path(name).is_file()]
    rounds = [name for name in args.rounds if name not in bundles]
    failed = 0
    for name in bundles:
        try:
            raw = Path(name).read_bytes()
        except OSError as error:
            print(f"cannot read bundle {name}: {error.strerror or error}", file=sys.stderr)
            return EXIT_USAGE
        verdict = audit.verify_bundle(raw)
        print(verdict.render())
        failed += not verdict.ok
    if bundles and not rounds and not args.all:
        return EXIT_OK if not failed else EXIT_FAILED
    app = _open(args)
    if args.all:
        rounds = _all_closed_rounds(app)
    if not rounds:
        print("nothing to verify: name a ROUND, a bundle FILE, or --all", file=sys.stderr)
        return EXIT_USAGE
    pins: dict[int, TablePins] = {}  # one reader per partition, shared over the run
    for round_id in rounds:
        part = app.app_for(round_id, "round") if hasattr(app, "app_for") else app
        reader = pins.setdefault(id(part), TablePins(part))
        verdict = audit.verify_round(part, round_id, check_wallets=True, pins=reader)
        if not verdict.ok or not args.quiet:
            print(verdict.render())
        failed += not verdict.ok
    checked = len(rounds) + len(bundles)
    print(f"{checked - failed} passed, {failed} failed")
    return EXIT_OK if not failed else EXIT_FAILED


def _all_closed_rounds(app: Any) -> list[str]:
    rounds: list[str] = []
    for partition in range(len(app.apps)):
        after = 0
        while True:
            batch = app.read_notifications(after, 1000, partition=partition)
            if not batch:
                break
            for item in batch:
                if item.kind == "round_closed":
                    rounds.append(item.stream_id)
            after = batch[-1].position
    return rounds


def cmd_export(args: argparse.Namespace) -> int:
    from pokdeng_service import audit

    app = _open(args)
    raw = audit.bundle_bytes(app.export_bundle(args.round))
    if args.output in (None, "-"):
        sys.stdout.write(raw.decode())
    else:
        Path(args.output).write_bytes(raw)
        print(f"wrote {args.output} ({len(raw)} bytes)")
    return EXIT_OK


def cmd_recall(args: argparse.Namespace) -> int:
    from pokdeng_service.cli import replay_view
    from pokdeng_service.readmodels import ReadModels

    config = _config(args)
    app = _open(args)
    key = args.table or args.player
    partition = app.partition(key, "table") if args.table else app.partition(key, "wallet")
    models = ReadModels(config.env(partition))
    models.catch_up(app.apps[partition])
    rounds = [r.round_id for r in models.last_rounds(table_id=args.table, player=args.player, limit=args.limit)]
    if args.json:
        print(json.dumps([app.get_round(r).model_dump() for r in rounds], indent=2))
        return EXIT_OK
    for round_id in rounds:
        print(replay_view.text(app.get_round(round_id)))
        print()
    print(f"{len(rounds)} round(s), oldest first")
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pokdeng", description="Pok Deng round engine and audit service")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run the gRPC server")
    _store_options(serve)
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=50051)
    serve.add_argument("--tokens", help="token file (JSON); default: development mode with a printed operator token")
    serve.add_argument("--workers", type=int, default=16, help="request threads")
    serve.set_defaults(handler=cmd_serve)

    demo = sub.add_parser("demo", help="play rounds of every profile through a real gRPC server, then verify one")
    demo.add_argument("--rounds", type=int, default=10, help="rounds per profile (default 10)")
    demo.add_argument("--db", help="SQLite file (default: a temporary one)")
    demo.add_argument("--seed", type=int, default=7, help="seed of the demo players' choices")
    demo.set_defaults(handler=cmd_demo)

    replay = sub.add_parser("replay", help="show a round step by step and check it")
    replay.add_argument("round")
    replay.add_argument("--html", help="also write a standalone HTML page")
    _store_options(replay)
    replay.set_defaults(handler=cmd_replay)

    verify = sub.add_parser("verify", help="verify rounds (chain, replay, money) or an exported bundle offline")
    verify.add_argument("rounds", nargs="*", metavar="ROUND|BUNDLE", help="round ids, or bundle files (.json)")
    verify.add_argument("--all", action="store_true", help="every closed round")
    verify.add_argument("--bundle", help="a bundle file from `pokdeng export` (no server or database needed)")
    verify.add_argument("--quiet", action="store_true", help="print failures only")
    _store_options(verify)
    verify.set_defaults(handler=cmd_verify)

    export = sub.add_parser("export", help="write a round's self-contained bundle (JSON)")
    export.add_argument("round")
    export.add_argument("-o", "--output", help="file (default: standard output)")
    _store_options(export)
    export.set_defaults(handler=cmd_export)

    recall = sub.add_parser("recall", help="the last rounds of a table or player, in play order")
    who = recall.add_mutually_exclusive_group(required=True)
    who.add_argument("--table")
    who.add_argument("--player")
    recall.add_argument("--limit", type=int, default=10)
    recall.add_argument("--json", action="store_true")
    _store_options(recall)
    recall.set_defaults(handler=cmd_recall)

    try:
        from pokdeng_service.cli.rtp import add_rtp_commands
    except ImportError:  # pragma: no cover
        pass
    else:
        add_rtp_commands(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args))
    except NotFound as error:
        print(f"pokdeng: {error}", file=sys.stderr)
        return EXIT_REFUSED
    except (ConfigError, ValueError) as error:
        print(f"pokdeng: {error}", file=sys.stderr)
        return EXIT_USAGE
    except DomainError as error:
        print(f"pokdeng: {error}", file=sys.stderr)
        return EXIT_REFUSED
    except OSError as error:
        print(f"pokdeng: {error}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
