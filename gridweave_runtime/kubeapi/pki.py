"""The control plane's keys and certificates, made once per state directory and reused.

One CA signs the apiserver's serving certificate and the admin client certificate
(``O=system:masters``); a separate key signs service-account tokens. Files that are still
valid are kept, so a kubeconfig written for this directory stays valid across restarts;
a leaf close to expiry is reissued from the same CA, and a missing or expiring CA starts
the whole set over. Private keys are written mode 0600.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = ["ADMIN_GROUP", "ADMIN_USER", "DEFAULT_HOSTS", "Pki", "ensure_pki"]

#: The admin client certificate's user and group: ``system:masters`` bypasses RBAC.
ADMIN_USER = "gridweave-admin"
ADMIN_GROUP = "system:masters"
#: Names the serving certificate covers unless told otherwise.
DEFAULT_HOSTS = ("localhost", "127.0.0.1", "kubernetes", "kubernetes.default.svc")

CA_LIFETIME = dt.timedelta(days=3650)
LEAF_LIFETIME = dt.timedelta(days=365)
#: A certificate with less than this left is replaced before the server starts.
RENEW_MARGIN = dt.timedelta(days=30)
_CA_NAME = "gridweave-kubeapi-ca"


@dataclass(frozen=True)
class Pki:
    """Where the PEM files of one state directory are."""

    directory: Path

    @property
    def ca_cert(self) -> Path:
        """The CA certificate clients trust and client certificates are checked against."""
        return self.directory / "ca.crt"

    @property
    def ca_key(self) -> Path:
        """The CA's private key."""
        return self.directory / "ca.key"

    @property
    def server_cert(self) -> Path:
        """The apiserver's serving certificate."""
        return self.directory / "apiserver.crt"

    @property
    def server_key(self) -> Path:
        """The apiserver's serving key."""
        return self.directory / "apiserver.key"

    @property
    def admin_cert(self) -> Path:
        """The admin client certificate (``system:masters``)."""
        return self.directory / "admin.crt"

    @property
    def admin_key(self) -> Path:
        """The admin client key."""
        return self.directory / "admin.key"

    @property
    def service_account_key(self) -> Path:
        """The private key that signs service-account tokens."""
        return self.directory / "service-account.key"

    @property
    def service_account_pub(self) -> Path:
        """The public key that verifies service-account tokens."""
        return self.directory / "service-account.pub"


def _name(common_name: str, organization: str | None = None) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if organization:
        attrs.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    return x509.Name(attrs)


def _write(path: Path, data: bytes, *, secret: bool) -> None:
    """Write atomically; keys are never readable by anyone else, even for a moment."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if secret else 0o644)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    tmp.replace(path)


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    _write(path, pem, secret=True)


def _write_cert(path: Path, cert: x509.Certificate) -> None:
    _write(path, cert.public_bytes(serialization.Encoding.PEM), secret=False)


def _load_key(path: Path) -> ec.EllipticCurvePrivateKey | None:
    try:
        key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    except (OSError, ValueError):
        return None
    return key if isinstance(key, ec.EllipticCurvePrivateKey) else None


def _load_cert(path: Path) -> x509.Certificate | None:
    try:
        return x509.load_pem_x509_certificate(path.read_bytes())
    except (OSError, ValueError):
        return None


def _fresh(cert: x509.Certificate | None, now: dt.datetime) -> bool:
    return cert is not None and cert.not_valid_after_utc - now > RENEW_MARGIN


def _sans(hosts: Sequence[str]) -> list[x509.GeneralName]:
    names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    return names


def _issue(
    subject: x509.Name,
    key: ec.EllipticCurvePrivateKey,
    ca_key: ec.EllipticCurvePrivateKey,
    now: dt.datetime,
    *,
    usage: x509.ObjectIdentifier | None = None,
    sans: list[x509.GeneralName] | None = None,
) -> x509.Certificate:
    is_ca = usage is None
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(_name(_CA_NAME))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + (CA_LIFETIME if is_ca else LEAF_LIFETIME))
        .add_extension(x509.BasicConstraints(ca=is_ca, path_length=None), critical=True)
    )
    if is_ca:
        builder = builder.add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
    else:
        assert usage is not None
        builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    return builder.sign(ca_key, hashes.SHA256())


def _signed_by(cert: x509.Certificate, ca: x509.Certificate) -> bool:
    try:
        cert.verify_directly_issued_by(ca)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def _covers(cert: x509.Certificate, hosts: Sequence[str]) -> bool:
    try:
        present = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return False
    return all(name in present for name in _sans(hosts))


def _ensure_leaf(
    cert_path: Path,
    key_path: Path,
    ca: tuple[x509.Certificate, ec.EllipticCurvePrivateKey],
    now: dt.datetime,
    subject: x509.Name,
    usage: x509.ObjectIdentifier,
    hosts: Sequence[str] = (),
) -> None:
    cert, key = _load_cert(cert_path), _load_key(key_path)
    if (
        cert is not None
        and key is not None
        and _fresh(cert, now)
        and _signed_by(cert, ca[0])
        and cert.public_key() == key.public_key()
        and cert.subject == subject
        and (not hosts or _covers(cert, hosts))
    ):
        return
    key = ec.generate_private_key(ec.SECP256R1())
    sans = _sans(hosts) if hosts else None
    _write_key(key_path, key)
    _write_cert(cert_path, _issue(subject, key, ca[1], now, usage=usage, sans=sans))


def ensure_pki(directory: Path, *, hosts: Sequence[str] = DEFAULT_HOSTS) -> Pki:
    """Make (or keep) the CA, serving, admin and service-account keys in ``directory``."""
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    pki = Pki(directory)
    now = dt.datetime.now(dt.UTC)
    ca_cert, ca_key = _load_cert(pki.ca_cert), _load_key(pki.ca_key)
    if (
        ca_cert is None
        or ca_key is None
        or not _fresh(ca_cert, now)
        or ca_cert.public_key() != ca_key.public_key()
    ):
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca_cert = _issue(_name(_CA_NAME), ca_key, ca_key, now)
        _write_key(pki.ca_key, ca_key)
        _write_cert(pki.ca_cert, ca_cert)
    ca = (ca_cert, ca_key)
    _ensure_leaf(
        pki.server_cert,
        pki.server_key,
        ca,
        now,
        _name("kube-apiserver"),
        ExtendedKeyUsageOID.SERVER_AUTH,
        hosts,
    )
    _ensure_leaf(
        pki.admin_cert,
        pki.admin_key,
        ca,
        now,
        _name(ADMIN_USER, ADMIN_GROUP),
        ExtendedKeyUsageOID.CLIENT_AUTH,
    )
    # Kept as long as it loads: tokens it signed stay valid across restarts.
    sa_key = _load_key(pki.service_account_key)
    if sa_key is None:
        sa_key = ec.generate_private_key(ec.SECP256R1())
        _write_key(pki.service_account_key, sa_key)
    public = sa_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    _write(pki.service_account_pub, public, secret=False)
    return pki
