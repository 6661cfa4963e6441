"""pokdeng_service: the event-sourced shell around pokdeng_core (persistence, gRPC, CLI)."""
