"""The audit commands: ``replay`` (a round as text, its verdict, the dispute page), ``verifier-page``, ``verify``
(rounds of the store, the whole store with ``--all``, bundle files offline), ``export`` and ``recall``. They open
the store read only (``common.open_read_only``); ``verify BUNDLE`` loads only the offline verifier."""

from __future__ import annotations

import argparse
import functools
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pokdeng_service.cli.checkpoints import public_keys
from pokdeng_service.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_UNANCHORED,
    EXIT_USAGE,
    ROUND_HELP,
    config_of,
    open_read_only,
    store_error,
)
from pokdeng_service.cli.output import output_file, verdicts_json, write_output

if TYPE_CHECKING:
    from pokdeng_service.application.config import StoreConfig


def cmd_replay(args: argparse.Namespace) -> int:
    from pokdeng_service import audit
    from pokdeng_service.cli import replay_view

    page = output_file(args.html) if args.html else None
    keys = public_keys(args.key) if page is not None else None  # (a key that cannot be read: bad usage, first)
    app = _round_app(open_read_only(args), args.round)
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
            print(verdicts_json(self.found, code, **self.summary), end="")
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
        print("pokdeng: nothing to verify: name a ROUND, a bundle FILE, or --all", file=sys.stderr)
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

    app = open_read_only(args)
    passed = tally["PASS"] + tally["UNANCHORED"]
    if args.all:
        code = _verify_all(app, out, passed, failed, config_of(args))
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
                print(f"pokdeng: cannot read bundle {name}: {error.strerror or error}", file=sys.stderr)
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
    app = _round_app(open_read_only(args), args.round)
    raw = audit.bundle_bytes(audit.export_bundle(app, args.round))
    if target is None:
        sys.stdout.write(raw.decode())
    else:
        write_output(target, raw)
        print(f"wrote {args.output} ({len(raw)} bytes)")
    return EXIT_OK


def cmd_recall(args: argparse.Namespace) -> int:
    from pokdeng_service.cli import replay_view

    config = config_of(args)
    app = open_read_only(args)
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
    views = home.get_rounds([r.round_id for r in summaries])  # (their streams read together, each once)
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
        if not store_error(error):
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
        if not store_error(error):
            raise
    if stored is not None:
        stored.close()
    models = ReadModels({"PERSISTENCE_MODULE": "eventsourcing.popo"})
    models.catch_up(app)
    return models


__all__ = ["cmd_export", "cmd_recall", "cmd_replay", "cmd_verifier_page", "cmd_verify"]
