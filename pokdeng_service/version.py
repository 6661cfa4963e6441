"""The package's version, in one place, and the format of the bundles it writes for others to read.

``pyproject.toml`` reads ``__version__`` from here (``[tool.setuptools.dynamic]``: setuptools parses this
file, it imports nothing). ``pokdeng --version`` prints it with the engine's version
(``pokdeng_core.catalog``), the shuffle's algorithm and the bundle's format. Constants only: importing this
module loads nothing else.

The package's version and the engine's are apart: the engine's (1.1.0) names the rules that decide rounds
and is recorded in every round; the package's names a release of the whole (service, CLI, client, formats).
"""

__version__ = "1.2.0"

BUNDLE_FORMAT = "pokdeng-round-bundle"
"""The ``format`` of a round bundle (docs/audit.md; ``audit.bundle`` writes and verifies it)."""
BUNDLE_VERSION = 2
"""Its ``format_version``: the one this package writes (2: ``made_for``, complete balances, the checkpoint's proof
alone). The verifier reads ``BUNDLE_VERSIONS_READ``."""
BUNDLE_VERSIONS_READ = (1, 2)
"""The versions ``verify_bundle`` reads (docs/audit.md, "Versions": a version 1 bundle is checked as version 1
was documented, with a warning of what it leaves unchecked)."""

__all__ = ["BUNDLE_FORMAT", "BUNDLE_VERSION", "BUNDLE_VERSIONS_READ", "__version__"]
