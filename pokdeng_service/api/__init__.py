"""pokdeng's gRPC API: the code generated from ``proto/`` (``v1``) and its generator (``generate``)."""
