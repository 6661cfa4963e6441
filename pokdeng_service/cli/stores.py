"""``pokdeng backup``, ``pokdeng restore`` and ``pokdeng rebuild-read-models``: copies of a store, and its views
made again (docs/operations.md, "Backups and restores" and "Read models")."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pokdeng_service.cli.output import output_file

if TYPE_CHECKING:
    from pokdeng_service.application.config import StoreConfig

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def verify_stores(config: StoreConfig) -> list[str]:
    """Every partition's store verified as ``pokdeng verify --all`` does it (``audit.verify_store``): the first
    problem of each verdict that fails, named with its subject (none: the store passes)."""
    from pokdeng_service import audit
    from pokdeng_service.application.partitions import PartitionedPokdeng

    service = PartitionedPokdeng.open_read_only(config)
    try:
        problems = []
        for k, part in enumerate(service.apps):
            for verdict in audit.verify_store(part, partition=k, partitions=len(service.apps)):
                if not verdict.ok:
                    where = f"partition {k}: " if len(service.apps) > 1 else ""
                    problems.append(f"{where}{verdict.subject}: {verdict.first_difference}")
        return problems
    finally:
        service.close()


def _say_verified(problems: list[str], what: str) -> None:
    if not problems:
        print(f"verified {what}: every stream passes (pokdeng verify --all)")
        return
    print(f"pokdeng: {what} fails verification ({len(problems)} verdict(s)); the first: {problems[0]}", file=sys.stderr)


def partition_file(first: Path, partition: int) -> Path:
    """The file of partition ``k`` beside ``first`` (partition 0's), named as the stores are."""
    from pokdeng_service.application.config import StoreConfig

    return StoreConfig(kind="sqlite", sqlite_path=str(first), partitions=partition + 1).sqlite_file(partition)


def cmd_backup(args: argparse.Namespace) -> int:
    from pokdeng_service.store import backup, readonly

    config = args.config_of(args)
    out = output_file(args.output)  # (a folder that does not exist: bad usage, before the store is read)
    if config.kind == "postgres":  # one dump per database (a partition map may name several: OUT, OUT.p<k>, ...)
        stores = enumerate(config.postgres_stores())
        dumps = [(out if i == 0 else partition_file(out, k), env, schemas) for i, (k, env, schemas) in stores]
        existing = [str(target) for target, _env, _schemas in dumps if target.exists()]
        if existing:
            print(f"pokdeng: {', '.join(existing)} exists: name a new file", file=sys.stderr)
            return EXIT_USAGE
        for target, env, schemas in dumps:
            backup.backup_postgres(env, target, schemas)
            size = target.stat().st_size
            print(f"backed up {readonly.postgres_place(env)} to {target} ({size} bytes, pg_dump custom format)")
    else:
        targets = [partition_file(out, k) for k in range(config.partitions)]
        existing = [str(target) for target in targets if target.exists()]
        if existing:
            print(f"pokdeng: {', '.join(existing)} exists: name a new file", file=sys.stderr)
            return EXIT_USAGE
        for k, target in enumerate(targets):
            source = config.sqlite_file(k)
            events = backup.backup_sqlite(source, target)
            print(f"backed up {source} to {target} ({events} events, {target.stat().st_size} bytes)")
    print("the vault key is not in the backup: keep a copy of it apart (docs/operations.md)")
    return EXIT_OK


def cmd_restore(args: argparse.Namespace) -> int:
    from pokdeng_service.store import backup, readonly

    config = args.config_of(args)
    source = Path(args.backup)
    if config.kind == "postgres":  # the dumps of `pokdeng backup`: one per database of the partition map
        for i, (k, env, _schemas) in enumerate(config.postgres_stores()):
            dump = source if i == 0 else partition_file(source, k)
            backup.restore_postgres(dump, env)
            print(f"restored {dump} into {readonly.postgres_place(env)}")
        return _restored(config)
    targets = [config.sqlite_file(k) for k in range(config.partitions)]
    existing = [str(target) for target in targets if target.exists()]
    if existing:
        print(
            f"pokdeng: {', '.join(existing)} exists: restore into a new file (move the old one aside first)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    for k, target in enumerate(targets):
        events = backup.restore_sqlite(partition_file(source, k), target)
        print(f"restored {partition_file(source, k)} to {target} ({events} events)")
    return _restored(config)


def _restored(config: StoreConfig) -> int:
    """What was restored, verified: exit 1 (and the first problem named) if it fails."""
    problems = verify_stores(config)
    _say_verified(problems, "the restored store")
    return EXIT_OK if not problems else EXIT_FAILED


def cmd_rebuild_read_models(args: argparse.Namespace) -> int:
    from pokdeng_service.application import PokdengApp
    from pokdeng_service.readmodels import ReadModels
    from pokdeng_service.store.lock import acquire_all, release_all

    config = args.config_of(args)
    readers = [config.read_only_env(k) for k in range(config.partitions)]  # the store must be there already
    problems = verify_stores(config)  # (views folded from a store whose events were edited would hide it)
    if problems and not args.force:
        _say_verified(problems, "the store")
        print("pokdeng: nothing rebuilt: mend the store first, or rebuild anyway with --force", file=sys.stderr)
        return EXIT_FAILED
    if problems:
        print(f"pokdeng: rebuilding anyway (--force): {problems[0]}", file=sys.stderr)
    locks = []
    if config.kind == "sqlite":  # not while a server runs on the file (its views would be emptied under it)
        locks = acquire_all((config.sqlite_file(k) for k in range(config.partitions)), "pokdeng rebuild-read-models")
    try:
        for k, reader in enumerate(readers):
            app = PokdengApp(reader, vault=config.audit_vault())  # the events are only read
            try:
                with ReadModels(config.env(k)) as models:
                    replayed = models.rebuild(app)
            finally:
                app.close()
            print(f"rebuilt the read models of partition {k} from {replayed} events")
    finally:
        release_all(locks)
    return EXIT_OK


def add_store_commands(
    sub: Any,
    store_options: Callable[[argparse.ArgumentParser], None],
    config_of: Callable[[argparse.Namespace], StoreConfig],
) -> None:
    """Register ``backup``, ``restore`` and ``rebuild-read-models`` on the ``pokdeng`` subparsers."""
    backup = sub.add_parser(
        "backup", help="copy the store to a file, safe while a server writes (SQLite backup API, or pg_dump)"
    )
    backup.add_argument("output", metavar="OUT", help="the new backup file (partition k of SQLite: OUT's stem.pK)")
    store_options(backup)
    backup.set_defaults(handler=cmd_backup, config_of=config_of)

    restore = sub.add_parser(
        "restore", help="make a new store from a backup (SQLite file, or pg_restore), then verify it (exit 1: fails)"
    )
    restore.add_argument("backup", metavar="BACKUP", help="a file of `pokdeng backup`")
    store_options(restore)
    restore.set_defaults(handler=cmd_restore, config_of=config_of)

    rebuild = sub.add_parser(
        "rebuild-read-models",
        help="empty the read models and project every event again (a store that fails verification: refused)",
    )
    rebuild.add_argument(
        "--force", action="store_true", help="rebuild even if the store fails verification (it is said which)"
    )
    store_options(rebuild)
    rebuild.set_defaults(handler=cmd_rebuild_read_models, config_of=config_of)
