"""dlcharts run's relay to the API server (run.api_relay) without a cluster: a client that trusts only the cluster
CA reaches a TLS server behind it through the relay's own certificate, and the relay stops with its block."""

from __future__ import annotations

import http.server
import json
import socket
import ssl
import subprocess
import threading
import urllib.request
from pathlib import Path

import pytest

from dlcharts.host import pki
from dlcharts.jobs import run


@pytest.fixture
def cluster_ca(tmp_path: Path) -> Path:
    """A state folder with a cluster CA where kwokctl writes one (pki/ca.crt, pki/ca.key)."""
    (tmp_path / "pki").mkdir()
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(tmp_path / "pki" / "ca.key"),
         "-out", str(tmp_path / "pki" / "ca.crt"), "-subj", "/CN=test-ca", "-days", "1",
         "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"],
        check=True, capture_output=True,
    )  # fmt: skip
    return tmp_path


def test_the_relay_passes_an_authenticated_request_to_the_api_server_and_back(cluster_ca: Path) -> None:
    seen: list[str | None] = []

    class Api(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            seen.append(self.headers.get("Authorization"))
            body = json.dumps({"path": self.path}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    pki.sign(cluster_ca, cluster_ca / "api" / "tls.crt", cluster_ca / "api" / "tls.key", "/CN=api", ["IP:127.0.0.1"])
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Api)
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(cluster_ca / "api" / "tls.crt", cluster_ca / "api" / "tls.key")
    server.socket = tls.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with run.api_relay(f"https://127.0.0.1:{server.server_port}", cluster_ca, "127.0.0.1") as url:
            assert url.startswith("https://127.0.0.1:") and url != f"https://127.0.0.1:{server.server_port}"
            request = urllib.request.Request(url + "/apis/batch/v1/namespaces/ns/jobs/x")
            request.add_header("Authorization", "Bearer pod-token")
            client = ssl.create_default_context(cafile=str(cluster_ca / "pki" / "ca.crt"))
            with urllib.request.urlopen(request, context=client, timeout=10) as response:
                assert json.load(response) == {"path": "/apis/batch/v1/namespaces/ns/jobs/x"}
            assert seen == ["Bearer pod-token"]
            port = int(url.rsplit(":", 1)[1])
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", port), timeout=2).close()
    finally:
        server.shutdown()
