"""What the tests and the benchmarks share; not part of the package (the wheel ships ``pokdeng_core``,
``pokdeng_service`` and ``pokdeng_client`` only).

* ``keys``       — the fixed test keys: the vault key that seals server seeds, a second one that does not
  open them, the signing key of tree heads.
* ``pgserver``   — throwaway PostgreSQL clusters (``TemporaryPostgres``), databases and schemas of their
  own, and ``free_port``, the one port picker.
* ``pgstandby``  — a primary and its synchronous streaming standby (failover runs).
* ``harness``    — real ``pokdeng serve`` processes, concurrent gRPC clients that play as a platform
  would, the end-of-run audits, and the crash, replica, failover and load runs
  (``python -m pokdeng_testkit.harness.crash --help`` and so on for their long forms).

``tests/`` and ``bench/`` both import it and never each other. It imports neither, nor pytest: a
missing dependency is the caller's to report (``tests/needs.py`` in the tests).
"""
