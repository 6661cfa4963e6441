"""pokdeng's gRPC API: the server, the one wrapper every call passes through (authentication,
roles, deadline, the error map), the request mapping, converters, the services, the client,
the generated code (``v1``) and its generator (``generate``).

May import: ``pokdeng_core``, ``pokdeng_service.application``, ``pokdeng_service.audit`` and
``pokdeng_service.store`` (codec only). Never the CLI.
"""
