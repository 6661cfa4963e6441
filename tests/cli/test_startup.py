"""``pokdeng`` starts at once: building the parser, parsing, ``--version`` and every command's ``--help`` load
nothing heavy (no gRPC, store, application, pydantic, numpy or rich), and ``verify BUNDLE`` loads only the
offline verifier (no event-sourced application, server, numpy or web pages).

Each case runs in a fresh interpreter (``python -c``) that reports the modules it loaded: what is asserted
is the import set, never a time.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pokdeng_core.catalog import ENGINE_VERSION
from pokdeng_core.shuffle import SHUFFLE_ALGORITHM
from pokdeng_service.cli.main import build_parser
from pokdeng_service.version import BUNDLE_FORMAT, BUNDLE_VERSION, __version__

ROOT = Path(__file__).resolve().parents[2]
WORKED_BUNDLE = ROOT / "docs" / "examples" / "worked_round.json"

# The round machine and game math, each a module and its parts (what ``pokdeng_core.machine`` and
# ``pokdeng_core.gamemath`` load): none of them is light.
MACHINE = (
    "pokdeng_core.machine",
    "pokdeng_core.round_betting",
    "pokdeng_core.round_cards",
    "pokdeng_core.round_dealing",
    "pokdeng_core.round_deciding",
    "pokdeng_core.round_ending",
    "pokdeng_core.round_evolve",
    "pokdeng_core.round_legal",
    "pokdeng_core.round_opening",
    "pokdeng_core.round_state",
    "pokdeng_core.round_turns",
)
GAMEMATH = (
    "pokdeng_core.gamemath",
    "pokdeng_core.ante_math",
    "pokdeng_core.deal_counts",
    "pokdeng_core.draw_game_math",
    "pokdeng_core.rtp_results",
    "pokdeng_core.rtp_simulation",
    "pokdeng_core.strategies",
)

# What no parse, --version or --help may load (a package stands for its submodules too).
HEAVY = (
    "grpc",
    "google.protobuf",
    "eventsourcing",
    "psycopg",
    "numpy",
    "pydantic",
    "pydantic_settings",
    "cryptography",
    "jinja2",
    "rich",
    "prometheus_client",
    "orjson",
    "rfc8785",
    "pokdeng_client",
    "pokdeng_core.profiles",
    *MACHINE,
    *GAMEMATH,
    "pokdeng_service.application",
    "pokdeng_service.api",
    "pokdeng_service.audit",
    "pokdeng_service.store",
    "pokdeng_service.readmodels",
    "pokdeng_service.wallet",
    "pokdeng_service.web",
    "pokdeng_service.compose",
    "pokdeng_service.projector",
    "pokdeng_service.cli.settings",
    "pokdeng_service.cli.console",
)
# What offline bundle verification may not load: the rules (pydantic), canonical JSON and the signatures'
# cryptography it needs; none of the store's application, the server, the read models, numpy or the pages.
NOT_FOR_A_BUNDLE = (
    "grpc",
    "google.protobuf",
    "eventsourcing",
    "psycopg",
    "numpy",
    "pydantic_settings",
    "jinja2",
    "rich",
    "prometheus_client",
    "pokdeng_client",
    *GAMEMATH,
    "pokdeng_core.table",
    "pokdeng_service.application",
    "pokdeng_service.api",
    "pokdeng_service.audit.live",
    "pokdeng_service.audit.store",
    "pokdeng_service.store.aggregates",
    "pokdeng_service.store.fastpaths",
    "pokdeng_service.readmodels",
    "pokdeng_service.wallet",
    "pokdeng_service.web",
    "pokdeng_service.compose",
)

# Runs ``main(argv)`` for each argv of sys.argv[1] (JSON) in this one interpreter, and prints, per argv, the
# exit code, standard output and the modules it loaded first.
PROBE = """
import contextlib, io, json, sys
from pokdeng_service.cli.main import main
runs = []
for argv in json.loads(sys.argv[1]):
    before, out = set(sys.modules), io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            code = main(argv)
        except SystemExit as done:
            code = done.code
    runs.append({"argv": argv, "code": code, "out": out.getvalue(), "loaded": sorted(set(sys.modules) - before)})
print(json.dumps({"runs": runs, "modules": sorted(sys.modules)}))
"""


def _probe(*argvs: list[str]) -> dict[str, Any]:
    """The probe's report (the first run's ``loaded`` includes what importing the CLI loaded)."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(argvs)], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return report


def _heavy(modules: list[str], heavy: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in heavy))


def _commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every command's words (``("checkpoints", "sign")``), the top level first (``()``)."""
    yield path
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _commands(sub, (*path, name))


COMMANDS = list(_commands(build_parser()))


def test_every_help_and_the_version_load_nothing_heavy() -> None:
    argvs = [[*command, "--help"] for command in COMMANDS] + [["--version"]]
    report = _probe(*argvs)
    for run in report["runs"]:
        assert run["code"] == 0, run
        assert not _heavy(run["loaded"], HEAVY), (
            f"pokdeng {' '.join(run['argv'])} loaded {_heavy(run['loaded'], HEAVY)}"
        )
    assert not _heavy(report["modules"], HEAVY)


def test_each_help_is_its_own_command_s() -> None:
    """``pokdeng verify --help`` is verify's, ``pokdeng checkpoints sign --help`` sign's, ``pokdeng keys new
    --help`` keys' (``new`` is its argument): not the group's."""
    argvs = [[*command, "--help"] for command in COMMANDS] + [["keys", "new", "--help"]]
    for run in _probe(*argvs)["runs"]:
        words = [w for w in run["argv"][:-1] if w != "new"]
        usage = " ".join(["usage: pokdeng", *words])
        assert run["out"].startswith(usage + " ") or run["out"].startswith(usage + "\n"), (run["argv"], run["out"])


def test_parsing_a_command_loads_nothing_heavy() -> None:
    """Parsing only (the handler replaced): what a command needs is imported when it runs, not before."""
    probe = PROBE.replace("code = main(argv)", "code = vars(build_parser().parse_args(argv)).get('command')")
    probe = probe.replace("import main", "import build_parser")
    argvs = [
        ["verify", "round.json", "--key", "k.pub"],
        ["verify", "--all", "--db", "x.sqlite"],
        ["serve", "--port", "0", "--log-format", "text"],
        ["replay", "t#1", "--html", "page.html"],
        ["rtp", "classic", "--strategy", "best"],
        ["simulate", "kingmaker", "--rounds", "10"],
        ["rng-report", "--shoes", "100", "--battery", "none"],
        ["math-report", "classic", "--straights"],
        ["checkpoints", "sign", "--db", "x.sqlite"],
        ["keys", "new", "--key-file", "k"],
        ["wallet", "reconcile", "--since", "2026-03-14"],
        ["backup", "out.sqlite"],
    ]
    done = subprocess.run(
        [sys.executable, "-c", probe, json.dumps(argvs)], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    assert [run["code"] for run in report["runs"]] == [argv[0] for argv in argvs]
    assert not _heavy(report["modules"], HEAVY), _heavy(report["modules"], HEAVY)


def test_the_version_names_the_package_engine_shuffle_and_bundle_format() -> None:
    (run,) = _probe(["--version"])["runs"]
    assert run["code"] == 0
    assert run["out"].splitlines() == [
        f"pokdeng {__version__}",
        f"engine {ENGINE_VERSION}",
        f"shuffle {SHUFFLE_ALGORITHM}",
        f"bundle {BUNDLE_FORMAT} v{BUNDLE_VERSION}",
    ]


def test_verifying_a_bundle_loads_only_the_offline_verifier() -> None:
    (run,) = _probe(["verify", str(WORKED_BUNDLE)])["runs"]
    assert run["code"] == 5, run["out"]  # (no key: every check passes, nothing anchors it)
    assert run["out"].startswith("UNANCHORED  bundle of round demo#1\n"), run["out"]
    assert not _heavy(run["loaded"], NOT_FOR_A_BUNDLE), _heavy(run["loaded"], NOT_FOR_A_BUNDLE)


@pytest.mark.parametrize("module", ["pokdeng_service.audit.bundle", "pokdeng_core.profiles"])
def test_the_old_homes_re_export_the_constants(module: str) -> None:
    """The constants ``--version`` reads live in light modules; their old homes give the same objects."""
    import importlib

    old = importlib.import_module(module)
    if module.endswith("bundle"):
        assert (old.BUNDLE_FORMAT, old.BUNDLE_VERSION) == (BUNDLE_FORMAT, BUNDLE_VERSION)
    else:
        from pokdeng_core import catalog

        assert old.ENGINE_VERSION is catalog.ENGINE_VERSION and old.PROFILE_NAMES is catalog.PROFILE_NAMES
        assert tuple(old.PRESETS) == catalog.PROFILE_NAMES


# What making a token may not load: the application, the rules, the pages.
NOT_FOR_A_TOKEN = (
    "numpy",
    "pydantic",
    "jinja2",
    "pokdeng_core.profiles",
    *MACHINE,
    "pokdeng_service.application.app",
    "pokdeng_service.application.pipeline",
    "pokdeng_service.audit",
    "pokdeng_service.readmodels",
    "pokdeng_service.wallet",
    "pokdeng_service.web",
)


def test_making_a_token_loads_no_application() -> None:
    """``pokdeng auth new`` (three of them open docs/api.md's walkthrough) starts without the application."""
    (run,) = _probe(["auth", "new", "--role", "auditor"])["runs"]
    assert run["code"] == 0, run["out"]
    assert run["out"].startswith("token "), run["out"]
    assert not _heavy(run["loaded"], NOT_FOR_A_TOKEN), _heavy(run["loaded"], NOT_FOR_A_TOKEN)
