"""The server's limits' defaults are declared once (``pokdeng_service.server_limits``): ``create_server``'s keyword
defaults, ``pokdeng serve``'s settings, its ``--help`` and the operations guide's table of settings all say the
same, so a default changed in one place alone fails here.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

from pokdeng_service import server_limits
from pokdeng_service.api.rates import DEFAULT_RATES
from pokdeng_service.api.server import create_server, serve
from pokdeng_service.cli.serve_flags import FLAGS
from pokdeng_service.cli.settings import ServeSettings

ROOT = Path(__file__).resolve().parents[2]

# the settings whose help or guide row says their default in words, not as the number
IN_WORDS = {"log_buffer_bytes", "wallet_protocol"}


def _defaults() -> dict[str, object]:
    return {name: field.default for name, field in ServeSettings.model_fields.items()}


def _numeric(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _shown(value: object) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def test_create_servers_defaults_are_the_settings_defaults() -> None:
    settings = _defaults()
    parameters = inspect.signature(create_server).parameters
    shared = {
        name: parameter.default
        for name, parameter in parameters.items()
        if name in settings and parameter.default is not inspect.Parameter.empty and parameter.default is not None
    }
    assert {"stream_idle", "connection_idle", "costly_workers", "metrics_threads", "metrics_timeout"} <= set(shared)
    assert {"probe_interval", "log_refusals_per_second"} <= set(shared)
    for name, default in shared.items():
        assert default == settings[name], f"create_server's {name}={default!r}, the settings' {settings[name]!r}"
    assert inspect.signature(serve).parameters["grace"].default == settings["shutdown_grace"]


def test_the_settings_rates_are_the_servers_default_rates() -> None:
    settings = _defaults()
    for rate_class, rate in DEFAULT_RATES.items():
        assert (rate.per_second, rate.burst) == (settings[f"rate_{rate_class}"], settings[f"rate_{rate_class}_burst"])


def test_the_settings_limits_are_the_constants() -> None:
    settings = _defaults()
    assert settings["workers"] == server_limits.WORKERS
    assert settings["max_health_watches"] == server_limits.HEALTH_WATCHES
    assert settings["max_reflection_streams"] == server_limits.REFLECTION_STREAMS
    assert inspect.signature(create_server).parameters["max_workers"].default == server_limits.SERVER_WORKERS


def test_the_help_states_every_numeric_default() -> None:
    for name, default in _defaults().items():
        flag = "--" + name.replace("_", "-")
        if not _numeric(default) or flag not in FLAGS or name in IN_WORDS:
            continue
        assert f"(default {_shown(default)}" in FLAGS[flag]["help"], (flag, default)


def test_the_operations_guides_table_states_every_numeric_default() -> None:
    guide = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    for name, default in _defaults().items():
        if not _numeric(default):
            continue
        row = re.search(rf"^\| [^|]+ \| `POKDENG_{name.upper()}` \| ([^|]*) \|", guide, re.MULTILINE)
        assert row is not None, name
        assert row.group(1).split()[0] == _shown(default), (name, row.group(1), default)
