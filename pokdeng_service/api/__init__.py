"""pokdeng's gRPC API: the server, the one wrapper every call passes through (authentication,
roles, deadline, the error map), the request mapping, converters, the services and the code
generator (``generate``). The generated messages and stubs and the client are ``pokdeng_client``.

May import: ``pokdeng_client``, ``pokdeng_core`` and the layers below it (audit, wallet, read models,
application, store). Never the CLI or the composition root.
"""
