"""Certificates for a throwaway test apiserver: a CA, a serving cert and an admin client cert."""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class PemPair:
    """A certificate and its private key, both PEM-encoded."""

    cert: bytes
    key: bytes


@dataclass(frozen=True)
class TestPKI:
    """The three pairs a test apiserver needs."""

    ca: PemPair
    server: PemPair
    admin: PemPair


def _name(common_name: str, organization: str | None = None) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if organization:
        attrs.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    return x509.Name(attrs)


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _issue(
    subject: x509.Name,
    key: ec.EllipticCurvePrivateKey,
    issuer: x509.Name,
    issuer_key: ec.EllipticCurvePrivateKey,
    *,
    is_ca: bool = False,
    usage: x509.ObjectIdentifier | None = None,
    sans: list[x509.GeneralName] | None = None,
) -> x509.Certificate:
    now = dt.datetime.now(dt.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=is_ca, path_length=None), critical=True)
    )
    if usage is not None:
        builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def make_test_pki() -> TestPKI:
    """Make a fresh CA, a server cert for 127.0.0.1/localhost and a system:masters client."""
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("gridweave-test-ca")
    ca_cert = _issue(ca_name, ca_key, ca_name, ca_key, is_ca=True)

    server_key = ec.generate_private_key(ec.SECP256R1())
    server_cert = _issue(
        _name("kube-apiserver"),
        server_key,
        ca_name,
        ca_key,
        usage=ExtendedKeyUsageOID.SERVER_AUTH,
        sans=[
            x509.DNSName("localhost"),
            x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
        ],
    )
    admin_key = ec.generate_private_key(ec.SECP256R1())
    admin_cert = _issue(
        _name("admin", "system:masters"),
        admin_key,
        ca_name,
        ca_key,
        usage=ExtendedKeyUsageOID.CLIENT_AUTH,
    )

    def pair(cert: x509.Certificate, key: ec.EllipticCurvePrivateKey) -> PemPair:
        return PemPair(cert.public_bytes(serialization.Encoding.PEM), _pem_key(key))

    return TestPKI(
        ca=pair(ca_cert, ca_key),
        server=pair(server_cert, server_key),
        admin=pair(admin_cert, admin_key),
    )
