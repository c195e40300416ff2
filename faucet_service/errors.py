"""faucet_service errors, each with a code, an HTTP status and a default message.

Tree::

    GridweaveError (gridweave_runtime)
    └── FaucetError
        ├── SignupNotFound         404
        ├── SignInCodeNotFound     404
        ├── WrongCode              400  (body: attempts_left)
        ├── CodeLocked             403
        ├── CodeNotForUser         403  (body: field)
        ├── NotOnboarded           403
        ├── AlreadyOnboarded       409  (body: field)
        ├── SignupPending          409  (body: field)
        ├── BalanceAboveThreshold  409  (body: balance, threshold)
        ├── CodeExpired            410
        ├── CodeUsed               410  (a sign-in code signs in once)
        ├── RateLimited            429  (body: scope, limit, window_seconds)
        ├── RefillTooSoon          429  (body: next_refill_at)
        ├── EmailDeliveryFailed    502  (raised to the mail sender, which retries; no route)
        ├── CreditRefused          502  (credit_service refused a faucet call)
        └── CreditUnavailable      503  (replay the call: nothing is lost)

A request that passes the schema but breaks a rule raises gridweave_runtime's
``InvalidRequest`` (422 ``invalid_request``, the field named), as in every service.
"""

from __future__ import annotations

from gridweave_runtime.errors import GridweaveError

__all__ = [
    "AlreadyOnboarded",
    "BalanceAboveThreshold",
    "CodeExpired",
    "CodeLocked",
    "CodeNotForUser",
    "CodeUsed",
    "CreditRefused",
    "CreditUnavailable",
    "EmailDeliveryFailed",
    "FaucetError",
    "NotOnboarded",
    "RateLimited",
    "RefillTooSoon",
    "SignInCodeNotFound",
    "SignupNotFound",
    "SignupPending",
    "WrongCode",
]


class FaucetError(GridweaveError):
    """Base of faucet_service's errors."""

    code = "faucet_error"
    status_code = 400
    message = "the faucet operation failed"


class SignupNotFound(FaucetError):
    """No sign-up (no code sent) for this email."""

    code = "signup_not_found"
    status_code = 404
    message = "no sign-up for this email: request a code first"


class SignInCodeNotFound(FaucetError):
    """No sign-in code was sent to this email."""

    code = "sign_in_code_not_found"
    status_code = 404
    message = "no sign-in code for this email: request one first"


class CodeUsed(FaucetError):
    """The sign-in code signed in already."""

    code = "code_used"
    status_code = 410
    message = "this sign-in code was used already: request another"


class WrongCode(FaucetError):
    """The code does not match."""

    code = "wrong_code"
    status_code = 400
    message = "the verification code is wrong"


class CodeLocked(FaucetError):
    """Too many wrong codes: this code no longer works, even when right."""

    code = "code_locked"
    status_code = 403
    message = "too many wrong codes: sign up again for a new code"


class CodeNotForUser(FaucetError):
    """The email's code was issued to another user: it never verifies for this one."""

    code = "code_not_for_user"
    status_code = 403
    message = "this email's code was issued to another user"


class NotOnboarded(FaucetError):
    """The user has no verified email, so no refill."""

    code = "not_onboarded"
    status_code = 403
    message = "this user has not verified an email"


class AlreadyOnboarded(FaucetError):
    """The email or the user already received the onboarding grant."""

    code = "already_onboarded"
    status_code = 409
    message = "the onboarding grant was already given"


class SignupPending(FaucetError):
    """The email has a live code issued to another user: no new one until it expires."""

    code = "signup_pending"
    status_code = 409
    message = "this email has a live verification code for another user: try again later"


class BalanceAboveThreshold(FaucetError):
    """The balance is not below the refill threshold."""

    code = "balance_above_threshold"
    status_code = 409
    message = "refills are only given below the threshold"


class CodeExpired(FaucetError):
    """The code is older than its time to live."""

    code = "code_expired"
    status_code = 410
    message = "the verification code expired: sign up again for a new code"


class RateLimited(FaucetError):
    """Too many requests for this email or client address in the window."""

    code = "rate_limited"
    status_code = 429
    message = "too many requests: try again later"


class RefillTooSoon(FaucetError):
    """The last refill is more recent than the refill period."""

    code = "refill_too_soon"
    status_code = 429
    message = "the last refill is too recent"


class EmailDeliveryFailed(FaucetError):
    """The SMTP server did not take the email."""

    code = "email_delivery_failed"
    status_code = 502
    message = "the verification email could not be sent"


class CreditRefused(FaucetError):
    """credit_service refused a call it should have taken (a deployment problem)."""

    code = "credit_refused"
    status_code = 502
    message = "credit_service refused the faucet's request"


class CreditUnavailable(FaucetError):
    """credit_service is unreachable; the request can be replayed safely."""

    code = "credit_unavailable"
    status_code = 503
    message = "credit_service is unavailable: retry, nothing was lost"
