"""The test keys, one set for every test and benchmark (hex, as ``POKDENG_VAULT_KEY`` takes them).

``VAULT_KEY`` seals and opens the server seeds of every store a test or a benchmark makes: any app,
server or check of a run opens the seeds any other sealed. ``OTHER_VAULT_KEY`` is a different key,
for the tests of what happens when the seal does not open (a lost or a wrong key). ``SIGNING_KEY``
signs tree heads (``SignTreeHead``, ``pokdeng checkpoints sign``). None of them is secret.
"""

from __future__ import annotations

VAULT_KEY = "5eed" * 16
OTHER_VAULT_KEY = "0f" * 32
SIGNING_KEY = "5151" * 16
