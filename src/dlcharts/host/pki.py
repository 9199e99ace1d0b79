"""Certificates signed by the embedded cluster's CA (the one kwokctl generated, ``<cluster>/pki/ca.{crt,key}``):
the real node's kubelet and the add-ons' webhook servers. openssl does the work."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from dlcharts.errors import ClusterError


def cluster_ca(state_dir: Path) -> tuple[Path, Path]:
    """The cluster CA's certificate and key; ClusterError if kwokctl left none."""
    ca, key = state_dir / "pki" / "ca.crt", state_dir / "pki" / "ca.key"
    if not ca.is_file() or not key.is_file():
        raise ClusterError(f"no cluster CA at {ca} / {key}; kwokctl's layout changed")
    return ca, key


def authority(cert: Path, key: Path, name: str) -> tuple[Path, Path]:
    """A new self-signed CA at ``cert`` and ``key`` named ``name`` (its CN and its one DNS name), for ten years: for a
    controller that checks its own CA by name (cert-controller's rotator does)."""
    cert.parent.mkdir(parents=True, exist_ok=True)
    key.parent.mkdir(parents=True, exist_ok=True)
    # PKCS#1 ("RSA PRIVATE KEY"), the form cert-controller parses a CA key in
    _openssl("genrsa", "-traditional", "-out", str(key), "2048")
    _openssl("req", "-x509", "-key", str(key), "-out", str(cert), "-days", "3650",
             "-subj", f"/CN={name}", "-addext", f"subjectAltName=DNS:{name}", "-addext",
             "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")  # fmt: skip
    return cert, key


def sign(
    state_dir: Path, cert: Path, key: Path, subject: str, sans: list[str], usages: str = "serverAuth",
    ca: tuple[Path, Path] | None = None,
) -> Path:  # fmt: skip
    """A new RSA key at ``key`` and a certificate at ``cert`` for ``subject`` (``/O=../CN=..``) with the subject
    alternative names ``sans`` (``IP:127.0.0.1``, ``DNS:name``) and extended key usages ``usages``, signed by the
    cluster CA (or ``ca``, a certificate and key) for a year; returns the CA certificate."""
    ca_cert, ca_key = ca or cluster_ca(state_dir)
    cert.parent.mkdir(parents=True, exist_ok=True)
    key.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="dlcharts-pki-") as tmp:
        csr, ext = Path(tmp) / "request.csr", Path(tmp) / "ext.cnf"
        ext.write_text(
            "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
            f"extendedKeyUsage={usages}\nsubjectAltName={','.join(sans)}\n"
        )
        _openssl("req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-subj", subject,
                 "-out", str(csr))  # fmt: skip
        _openssl("x509", "-req", "-in", str(csr), "-CA", str(ca_cert), "-CAkey", str(ca_key), "-set_serial",
                 f"0x{os.urandom(8).hex()}", "-days", "365", "-extfile", str(ext), "-out", str(cert))  # fmt: skip
    return ca_cert


def _openssl(*args: str) -> None:
    proc = subprocess.run(["openssl", *args], capture_output=True, text=True, check=False, timeout=60)
    if proc.returncode != 0:
        raise ClusterError(f"`openssl {' '.join(args)}` failed (exit {proc.returncode}): {proc.stderr.strip()}")
