"""pokdeng_service: the event-sourced shell around ``pokdeng_core``.

The layers, top to bottom (each package's ``__init__`` says what it holds; the one declaration of what may
import what is pyproject.toml's ``[tool.importlinter]``, checked by tests/test_layers.py with every import
counted; docs/architecture.md has the table):

* ``cli`` (the ``pokdeng`` command) and ``auth`` (the token tool);
* ``compose``: the composition root: settings in, applications, clocks, read models and a server out;
* ``api`` (the gRPC server), ``projector`` (the read models' child process) and ``web`` (the pages);
* ``audit``: verdicts, pure replay, offline bundles, live and whole-store verification;
* ``wallet`` (the platform's wallet) and ``readmodels`` (projections of the event log);
* ``application``: commands as data, the one pipeline that runs them, the wallet port, queries, views,
  partitions, settings and the turn clock;
* ``store``: the stored model (aggregates, codec, vault, Merkle tree, signed heads, library fast paths);
* ``logs``, ``version`` and ``server_limits`` (the defaults of the server's limits), which import nothing of the
  service.

``pokdeng_core`` (the rules) and ``pokdeng_client`` (what a platform installs) import nothing of this package.
"""

from pokdeng_service.version import __version__ as __version__
