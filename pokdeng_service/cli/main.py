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
import gc
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from pokdeng_service.cli.audits import cmd_export, cmd_recall, cmd_replay, cmd_verifier_page, cmd_verify
from pokdeng_service.cli.auth import add_auth_commands
from pokdeng_service.cli.certify import add_certification_commands
from pokdeng_service.cli.checkpoints import add_checkpoint_commands
from pokdeng_service.cli.common import (
    EXIT_REFUSED,
    EXIT_UNAVAILABLE,
    EXIT_USAGE,
    ROUND_HELP,
    config_of,
    int_range,
    loaded,
    one_line,
    open_read_only,
    store_error,
    store_options,
)
from pokdeng_service.cli.output import EXIT_SIGPIPE
from pokdeng_service.cli.rtp import add_rtp_commands
from pokdeng_service.cli.serve_flags import add_serve_flags
from pokdeng_service.cli.stores import add_store_commands
from pokdeng_service.cli.wallet import add_wallet_commands

if TYPE_CHECKING:
    from pokdeng_service.application.config import StoreConfig
    from pokdeng_service.cli.settings import ServeSettings
    from pokdeng_service.compose import Deployment
    from pokdeng_service.wallet.config import WalletConfig


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


def cmd_serve(args: argparse.Namespace) -> int:
    """Every flag also from the environment (``cli.settings.ServeSettings``, docs/operations.md).

    Before anything is written (the store's lock, its vault key, a development token printed), every
    setting is checked: the token file and the TLS files (their modes, the certificate's dates), the
    wallet's, and that both ports can be listened on (a port in use: exit 2)."""
    from pokdeng_service.logs import capture_stderr, quiet_grpc_core

    quiet_grpc_core()  # (before grpc is imported: no line per failed TLS handshake)
    from pokdeng_service.api.server import serve
    from pokdeng_service.cli.settings import ServeSettings

    settings = ServeSettings.from_args(args)
    options = settings.server_options()  # (checks the TLS settings before the store is opened)
    wallet = settings.wallet_config()  # (and the wallet's: an adapter, a URL it speaks)
    settings.check_ports()  # (a port in use: refused before any file is made)
    _configure_logging(settings)
    config = settings.store_config()
    deployment = _started_deployment(settings, config, wallet)
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


def _configure_logging(settings: ServeSettings) -> None:
    """The server's log as its settings say: format, level, the longest field, the buffer's lines and bytes."""
    from pokdeng_service.logs import configure_logging

    configure_logging(
        settings.log_format,
        settings.log_level,
        field_chars=settings.log_field_chars,
        buffer_lines=settings.log_buffer_lines,
        buffer_bytes=settings.log_buffer_bytes,
    )


def _started_deployment(settings: ServeSettings, config: StoreConfig, wallet: WalletConfig) -> Deployment:
    """The store, the services and the wallet opened and started; never on an adapter that cannot finish the
    money the store holds (docs/wallet.md, "Switching adapters"): then closed again, and the error raised."""
    from pokdeng_service.compose import Deployment
    from pokdeng_service.wallet.switch import check_switch

    deployment = Deployment.open(
        config,
        wallet=wallet,
        read_models=settings.read_models,
        log_format=settings.log_format,
        log_level=settings.log_level,
    )
    try:
        check_switch(deployment.service.apps, wallet, allow=settings.wallet_allow_unfinished)
    except BaseException:
        deployment.close()
        raise
    deployment.start()
    return deployment


def cmd_demo(args: argparse.Namespace) -> int:
    from pokdeng_service.cli.demo import run_demo

    return run_demo(rounds=args.rounds, db=args.db, seed=args.seed)


Handler = Callable[[argparse.Namespace], int]


def _serve_options(serve: argparse.ArgumentParser) -> None:
    store_options(serve)
    add_serve_flags(serve)


def _demo_options(demo: argparse.ArgumentParser) -> None:
    demo.add_argument("--rounds", type=int_range(1), default=10, help="rounds per profile (default 10)")
    demo.add_argument(
        "--db", help="SQLite file to keep the demo's store in (default: pokdeng-demo.sqlite here, or the next free one)"
    )
    demo.add_argument("--seed", type=int, default=7, help="seed of the demo players' choices (default 7)")


def _replay_options(replay: argparse.ArgumentParser) -> None:
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
    store_options(replay)


def _verifier_page_options(verifier: argparse.ArgumentParser) -> None:
    verifier.add_argument("output", metavar="FILE", help="the HTML file to write")
    verifier.add_argument(
        "--key", action="append", help="the operator's public key (hex) or key file, filled in on the page (repeatable)"
    )


def _verify_options(verify: argparse.ArgumentParser) -> None:
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
    store_options(verify)


def _export_options(export: argparse.ArgumentParser) -> None:
    export.add_argument("round", metavar="ROUND", help=ROUND_HELP)
    export.add_argument("-o", "--output", help="file (default: standard output)")
    store_options(export)


def _recall_options(recall: argparse.ArgumentParser) -> None:
    who = recall.add_mutually_exclusive_group(required=True)
    who.add_argument("--table", help="the table's id: its last rounds")
    who.add_argument("--player", help="a player's (wallet's) id: the last rounds it played")
    recall.add_argument("--limit", type=int_range(1, 1000), default=10, help="how many rounds, 1 to 1000 (default 10)")
    recall.add_argument(
        "--json", action="store_true", help="print the rounds as JSON instead of text (amounts in minor units)"
    )
    store_options(recall)


# The commands of this module, in the order of `pokdeng --help`: name, help, its options, its handler.
COMMANDS: tuple[tuple[str, str, Callable[[argparse.ArgumentParser], None], Handler], ...] = (
    ("serve", "run the gRPC server (every flag also from $POKDENG_<FLAG>: docs/operations.md)", _serve_options,
     cmd_serve),
    ("demo", "play rounds of every profile through a real gRPC server, then verify one", _demo_options, cmd_demo),
    ("replay", "show a round step by step and check it; --html: the dispute page", _replay_options, cmd_replay),
    ("verifier-page", "write a page that checks any bundle file in the browser", _verifier_page_options,
     cmd_verifier_page),
    ("verify", "verify rounds (chain, replay, money) or an exported bundle offline", _verify_options, cmd_verify),
    ("export", "write a round's self-contained bundle (JSON)", _export_options, cmd_export),
    ("recall", "the last rounds of a table or player, in play order", _recall_options, cmd_recall),
)  # fmt: skip


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pokdeng", description="Pok Deng round engine and audit service")
    parser.add_argument(
        "--version", action=_VersionAction, help="print the version (and the engine's, the shuffle's, the bundle's)"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, help_text, options, handler in COMMANDS:
        command = sub.add_parser(name, help=help_text)
        options(command)
        command.set_defaults(handler=handler)
    add_store_commands(sub, store_options, config_of)
    add_rtp_commands(sub)
    add_certification_commands(sub)
    add_checkpoint_commands(sub, store_options)
    add_wallet_commands(sub, store_options, open_read_only)
    add_auth_commands(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args))
    except loaded("pokdeng_service.application.errors", "NotFound") as error:
        print(f"pokdeng: {error}", file=sys.stderr)
        return EXIT_REFUSED
    except ValueError as error:  # (and application.config's ConfigError, a ValueError)
        print(f"pokdeng: {error}", file=sys.stderr)
        return EXIT_USAGE
    except loaded("pokdeng_core.errors", "DomainError") as error:
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
        if isinstance(error, loaded("pokdeng_service.store.vault", "VaultError")):
            print(f"pokdeng: {error}", file=sys.stderr)
            return EXIT_USAGE
        if not store_error(error):
            raise
        print(f"pokdeng: the store failed: {one_line(error)}", file=sys.stderr)
        return EXIT_UNAVAILABLE


if __name__ == "__main__":
    sys.exit(main())
