"""What makes a local registry look like a production one: TLS from a throwaway CA, and htpasswd logins.

Each start of a secure :class:`dlcharts.host.registry.Registry` calls :func:`make_access` for a fresh set:

``tls/ca.crt``
    the CA certificate clients trust (``helm --ca-file``, ``SSL_CERT_FILE``); the CA's private key is never
    written anywhere, so no other certificate can be made with that CA once this returns.
``tls/server.crt``, ``tls/server.key``
    the registry's certificate, for ``127.0.0.1`` and ``localhost``, signed by that CA.
``auth/htpasswd``
    one bcrypt entry (what distribution's htpasswd access controller accepts) for user ``dlcharts``.
``auth/password``
    that user's password (mode 0600), for ``helm registry login --password-stdin``.
``auth/docker/config.json``
    the same login for Docker-config readers (crane): ``DOCKER_CONFIG=<root>/auth/docker``.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime
import ipaddress
import json
import os
import secrets
from pathlib import Path

USERNAME = "dlcharts"
#: how long the throwaway CA and the registry's certificate are valid; a registry running longer needs a restart
VALIDITY = datetime.timedelta(days=30)


@dataclasses.dataclass(frozen=True)
class Access:
    """Where a client finds what it needs to reach a secure registry."""

    ca: Path
    certificate: Path
    key: Path
    htpasswd: Path
    username: str
    password_file: Path
    docker_config: Path  # a folder, for DOCKER_CONFIG

    @classmethod
    def under(cls, root: Path) -> Access:
        return cls(
            ca=root / "tls" / "ca.crt",
            certificate=root / "tls" / "server.crt",
            key=root / "tls" / "server.key",
            htpasswd=root / "auth" / "htpasswd",
            username=USERNAME,
            password_file=root / "auth" / "password",
            docker_config=root / "auth" / "docker",
        )

    @property
    def password(self) -> str:
        return self.password_file.read_text().strip()

    def complete(self) -> bool:
        return all(p.is_file() for p in (self.ca, self.certificate, self.key, self.htpasswd, self.password_file))

    def client_env(self) -> dict[str, str]:
        """Environment for Go clients (crane, helm): trust the CA, and crane's login."""
        return {"SSL_CERT_FILE": str(self.ca), "DOCKER_CONFIG": str(self.docker_config)}


def make_access(root: Path, address: str) -> Access:
    """A fresh throwaway CA, a certificate for ``address``'s host signed by it, and a new password."""
    access = Access.under(root)
    for folder in (access.ca.parent, access.htpasswd.parent, access.docker_config):
        folder.mkdir(parents=True, exist_ok=True)
    _write_tls(access)
    password = secrets.token_urlsafe(24)
    _write_private(access.password_file, password + "\n")
    _write_private(access.htpasswd, f"{access.username}:{_bcrypt(password)}\n")
    login = base64.b64encode(f"{access.username}:{password}".encode()).decode()
    _write_private(access.docker_config / "config.json", json.dumps({"auths": {address: {"auth": login}}}) + "\n")
    return access


def _bcrypt(password: str) -> str:
    import bcrypt

    # distribution checks with golang.org/x/crypto/bcrypt, which reads the $2b$ prefix bcrypt writes. It checks on
    # every request (no sessions), so the default cost (12, ~0.3 s here) made a push of every chart take ~50 s. The
    # password is 192 random bits: the hash's cost adds nothing against guessing it, so the lowest cost will do.
    return bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=4)).decode()


def _write_private(path: Path, text: str) -> None:
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)


def _write_tls(access: Access) -> None:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_title = f"dl-charts throwaway registry CA {now:%Y%m%d%H%M%S}"
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, ca_title)])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
                          key_encipherment=False, data_encipherment=False, key_agreement=False,
                          encipher_only=False, decipher_only=False),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )  # fmt: skip
    key = ec.generate_private_key(ec.SECP256R1())
    server = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + VALIDITY)
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )  # fmt: skip
    access.ca.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    access.certificate.write_bytes(server.public_bytes(serialization.Encoding.PEM))
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    _write_private(access.key, pem.decode())
