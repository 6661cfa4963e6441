"""What the ``pokdeng`` commands share: the exit codes, the event store's options, opening the store (to write,
or read only as evidence), and telling a store's failure from the others. Light to import (the store's modules
load inside the functions)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pokdeng_service.cli.stores import partition_file

if TYPE_CHECKING:
    from pokdeng_service.application.config import StoreConfig

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_REFUSED, EXIT_UNAVAILABLE, EXIT_UNANCHORED = 0, 1, 2, 3, 4, 5
ROUND_HELP = "the round's id, TABLE#N: the table's id, '#' and the round's number (quote it in a shell: 'demo#1')"


def store_options(parser: argparse.ArgumentParser) -> None:
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


def int_range(low: int, high: int | None = None) -> Callable[[str], int]:
    """An argparse type: a whole number from ``low`` (to ``high``); anything else is bad usage (exit 2), said by
    the parser before the command runs."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
        if value < low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"{value} is not {low} to {high}" if high else f"at least {low}")
        return value

    parse.__name__ = "number"
    return parse


def config_of(args: argparse.Namespace) -> StoreConfig:
    from pokdeng_service.application.config import StoreConfig

    return StoreConfig.from_args(
        db=args.db,
        postgres_url=args.postgres_url,
        partitions=args.partitions,
        vault_key_file=getattr(args, "vault_key_file", None),
        partition_urls=getattr(args, "partition_url", None),
    )


def open_store(args: argparse.Namespace) -> Any:
    from pokdeng_service.application.partitions import PartitionedPokdeng

    return PartitionedPokdeng.open(config_of(args))


def open_read_only(args: argparse.Namespace) -> Any:
    """The store as evidence: read only, nothing created, no vault key unless an open round needs it."""
    from pokdeng_service.application.partitions import PartitionedPokdeng

    config = config_of(args)
    if config.kind == "sqlite" and config.sqlite_path:
        beside = partition_file(Path(config.sqlite_path), config.partitions)
        if beside.exists():  # (a partition the command was not told of: it would be left unread)
            print(
                f"pokdeng: note: {beside} lies beside the store, a partition beyond the {config.partitions} "
                f"given: name every partition with --partitions",
                file=sys.stderr,
            )
    return PartitionedPokdeng.open_read_only(config)


def loaded(module: str, name: str) -> tuple[type[BaseException], ...]:
    """The exception class ``module.name`` if its module is loaded, else none (``except`` and ``isinstance``
    take either): an error of a module never imported cannot have been raised, and the CLI imports no
    module only to look at an error's class."""
    found = sys.modules.get(module)
    return (getattr(found, name),) if found is not None else ()


def store_error(error: BaseException) -> bool:
    """An error of the event store (the library's, sqlite3's or psycopg's): the store is unavailable."""
    errors = (
        *loaded("eventsourcing.persistence", "PersistenceError"),
        *loaded("sqlite3", "Error"),
        *loaded("psycopg", "Error"),
    )
    return isinstance(error, errors)


def one_line(error: BaseException) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return "; ".join(lines) or type(error).__name__


__all__ = [
    "EXIT_FAILED",
    "EXIT_OK",
    "EXIT_REFUSED",
    "EXIT_UNANCHORED",
    "EXIT_UNAVAILABLE",
    "EXIT_USAGE",
    "ROUND_HELP",
    "config_of",
    "int_range",
    "loaded",
    "one_line",
    "open_read_only",
    "open_store",
    "store_error",
    "store_options",
]
