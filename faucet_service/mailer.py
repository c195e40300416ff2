"""The verification email, and sending it over SMTP (``smtplib``, standard library)."""

from __future__ import annotations

import smtplib
import ssl
from datetime import datetime
from email.message import EmailMessage

from faucet_service.errors import EmailDeliveryFailed
from faucet_service.settings import FaucetSettings

__all__ = ["SIGN_IN_SUBJECT", "SUBJECT", "send_by_smtp", "sign_in_email", "verification_email"]

SUBJECT = "Your Gridweave verification code"
SIGN_IN_SUBJECT = "Your Gridweave sign-in code"


def verification_email(
    *, recipient: str, code: str, expires_at: datetime, sender: str
) -> EmailMessage:
    """The email that carries a verification code."""
    message = EmailMessage()
    message["From"] = sender
    message["To"] = recipient
    message["Subject"] = SUBJECT
    message.set_content(
        f"Your Gridweave verification code is {code}.\n\n"
        f"It works until {expires_at.isoformat(timespec='seconds')}.\n"
        "If you did not sign up for Gridweave, ignore this email.\n"
    )
    return message


def sign_in_email(*, recipient: str, code: str, expires_at: datetime, sender: str) -> EmailMessage:
    """The email that carries a sign-in code of an existing user."""
    message = EmailMessage()
    message["From"] = sender
    message["To"] = recipient
    message["Subject"] = SIGN_IN_SUBJECT
    message.set_content(
        f"Your Gridweave sign-in code is {code}.\n\n"
        f"It works once, until {expires_at.isoformat(timespec='seconds')}.\n"
        "If you did not ask to sign in to Gridweave, ignore this email: nobody can sign in "
        "without the code.\n"
    )
    return message


def send_by_smtp(message: EmailMessage, settings: FaucetSettings) -> None:
    """Hand ``message`` to the configured SMTP server; raises EmailDeliveryFailed."""
    assert settings.smtp_host is not None
    try:
        with smtplib.SMTP(
            settings.smtp_host, settings.smtp_port, timeout=settings.smtp_timeout_seconds
        ) as smtp:
            if settings.smtp_starttls:
                smtp.starttls(context=ssl.create_default_context())
            if settings.smtp_username is not None:
                password = (
                    settings.smtp_password.get_secret_value() if settings.smtp_password else ""
                )
                smtp.login(settings.smtp_username, password)
            smtp.send_message(message)
    except (smtplib.SMTPException, OSError) as exc:
        raise EmailDeliveryFailed(smtp_error=type(exc).__name__) from exc
