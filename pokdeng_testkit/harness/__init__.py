"""Reliability harnesses for pokdeng: real ``pokdeng serve`` processes, concurrent gRPC clients, checks.

* ``server``  — a ``pokdeng serve`` child process (SQLite file or PostgreSQL URL, a token file, a
  fixed port on 127.0.0.1) that can be SIGKILLed and restarted on the same port; the stores.
* ``tokens``  — a token file (operator, auditor, players) and the clear tokens the clients use.
* ``client``  — ``HarnessClient``, a ``PokdengClient`` that retries one request id until it gets an
  answer (UNAVAILABLE, DEADLINE_EXCEEDED, ABORTED) and records latencies, errors and replays.
* ``driver``  — ``TableDriver`` plays rounds at a table from what GetTable, GetRound and
  GetLegalCommands say, with request ids derived from the round and its state, so any client that
  sees the same state sends the same request (a retry, or a second client on another replica).
* ``checks``  — the end-of-run audit through the API and directly in the store.
* ``baseline`` — the raw-append baseline of a run: the same transactions appended with a minimal
  aggregate to a fresh store of the same kind (``bench/load.py``), and a served store's log read only.
* ``crash``   — the crash-and-restart harness (``python -m pokdeng_testkit.harness.crash --help``).
* ``replicas`` — two servers on one PostgreSQL store, clients sharing tables and wallets.

Every child process is started in its own session and killed by its pid (``ServerProcess.close``);
every loop is bounded in count and time.
"""
