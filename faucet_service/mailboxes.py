"""One mailbox, one key: the addresses that deliver to the same mailbox count as one.

The onboarding grant, the verification code and the per-email rate limit are counted per
*mailbox*, not per address as typed:

- a sub-address (``+tag``) is dropped for every domain: ``ann+1@x.com`` is ``ann@x.com``;
- dots in the local part are dropped for the providers known to ignore them (Gmail):
  ``a.n.n@gmail.com`` is ``ann@gmail.com``; ``googlemail.com`` is ``gmail.com``;
- the whole address is lower-cased and trimmed (``gridweave_clients``' ``Email`` type).

The code is still sent to the address as typed: a domain without sub-addressing delivers
``ann+1@x.com`` to a mailbox of its own, which is the one that must prove it.
"""

from __future__ import annotations

__all__ = ["DOMAIN_ALIASES", "DOTS_IGNORED", "mailbox_of"]

#: Domains that are another name of one provider's mailboxes.
DOMAIN_ALIASES = {"googlemail.com": "gmail.com"}
#: Providers that deliver ``a.n.n@`` and ``ann@`` to the same mailbox.
DOTS_IGNORED = frozenset({"gmail.com"})


def mailbox_of(email: str) -> str:
    """The canonical mailbox of ``email`` (already trimmed and lower-cased)."""
    local, separator, domain = email.rpartition("@")
    if not separator:
        return email
    domain = DOMAIN_ALIASES.get(domain, domain)
    base, _, _ = local.partition("+")
    local = base or local  # "+tag@x" alone has no base to keep
    if domain in DOTS_IGNORED:
        local = local.replace(".", "") or local
    return f"{local}@{domain}"
