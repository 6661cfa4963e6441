"""The one Jinja2 environment of the HTML the package writes: the pages (``web``) and the certification
reports (``certification``).

``environment(package)`` reads the templates of ``package``'s ``templates`` folder with every value
escaped (HTML templates and strings alike), an undefined name an error (``StrictUndefined``) and a block
tag's own line and indent left out of the output.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape


def environment(
    package: str, filters: Mapping[str, Callable[..., Any]], *, keep_trailing_newline: bool = False
) -> Environment:
    """A Jinja2 environment of the templates in ``package``'s ``templates`` folder, with ``filters`` besides
    Jinja2's own; ``keep_trailing_newline``: a template's last newline is kept."""
    env = Environment(
        loader=PackageLoader(package, "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=keep_trailing_newline,
    )
    env.filters.update(filters)
    return env


__all__ = ["environment"]
