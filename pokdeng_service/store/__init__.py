"""The stored model: aggregates and their events on the ``eventsourcing`` library.

Holds the aggregates (``aggregates``), the plain-value codec and canonical JSON (``codec``),
the one record type of a stored event (``facts``), the seed vault (``vault``), the Merkle
tree (``merkle``), the library fast paths (``fastpaths``, the mapper's in ``fastmapper``), group
commit of a SQLite store's waiting commands (``commits``) and the identity and chain checks of
a loaded stream (``integrity``), the store's log of closed rounds (``roundlog``) and signed
tree heads with their keys (``signing``); and the store as files and servers: opening it read
only for the audit tools (``readonly``), the one-server lock of a SQLite file (``lock``),
backups and restores (``backup``).

May import: ``pokdeng_core`` and the libraries. Nothing above it (the application, wallet, read
models, audit, API, CLI).
"""
