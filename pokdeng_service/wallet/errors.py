"""The refusals of a stake the platform's wallet did not take: ``WalletRefused`` is mapped to FAILED_PRECONDITION
by the API, ``WalletUnavailable`` (no answer, try again) to UNAVAILABLE."""

from __future__ import annotations

from pokdeng_core.errors import DomainError


class WalletRefused(DomainError):
    """The platform refused a stake's debit for a reason other than funds (a reused tx id, a limit)."""

    code = "wallet_refused"


class WalletUnavailable(DomainError):
    """The platform's wallet did not answer in time; a stake's debit is rolled back (retry the command)."""

    code = "wallet_unavailable"
