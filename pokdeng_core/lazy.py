"""A package's public names loaded on first use (PEP 562), so that importing one module loads no other.

``lazy_exports(package, exports, names)`` gives a package the ``__getattr__`` and ``__dir__`` that load
each public name from its module when it is first read (``exports``: (module, names) pairs), or a
submodule by its name (``pokdeng_core.machine``). ``pokdeng_core`` and ``pokdeng_service.audit`` use it:
``pokdeng --version`` and ``pokdeng verify BUNDLE`` start without the rules' pydantic models or a store.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Sequence
from types import MappingProxyType
from typing import Any


def lazy_exports(
    package: str, exports: Iterable[tuple[str, Sequence[str]]], names: Iterable[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The package's ``__getattr__`` and ``__dir__`` (``names``: what else the package holds, its ``__all__``)."""
    homes = MappingProxyType({name: module for module, members in exports for name in members})
    listed = sorted({*names, *homes})

    def __getattr__(name: str) -> Any:
        """A public name from its module (imported on first use), or a submodule."""
        home = homes.get(name)
        if home is not None:
            return getattr(importlib.import_module(f"{package}.{home}"), name)
        if not name.startswith("_"):
            try:
                return importlib.import_module(f"{package}.{name}")
            except ModuleNotFoundError as error:
                if error.name != f"{package}.{name}":
                    raise
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return listed

    return __getattr__, __dir__


__all__ = ["lazy_exports"]
