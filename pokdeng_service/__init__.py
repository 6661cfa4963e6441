"""pokdeng_service: the event-sourced shell around ``pokdeng_core``.

The layers, each a subpackage (its ``__init__`` says what it holds and what it may import):

* ``store``: the stored model (aggregates, codec, the record type, vault, Merkle tree, library fast paths);
* ``application``: commands as data, the one pipeline that runs them, queries, views, partitions,
  settings and the turn clock;
* ``audit``: verdicts, pure replay, offline bundles, live verification, table pins;
* ``readmodels``: projections of the event log (models, the pure fold, a backend each, the runner);
* ``api``: the gRPC server, the one wrapper every call passes through, auth, the error map,
  request mapping, converters, the services, the client and the generated code;
* ``cli``: the ``pokdeng`` command.

``compose`` is the composition root: settings in, applications, clocks, read models and a server out.
Imports go down this list only (``cli`` and ``compose`` may import everything); ``pokdeng_core``
never imports this package.
"""
