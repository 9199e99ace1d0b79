"""The start watch's route to the API server on the embedded cluster's real node (:func:`api_relay`)."""

from __future__ import annotations

import contextlib
import select
import socket
import ssl
import threading
import urllib.parse
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def api_relay(server: str, state_dir: Path, address: str) -> Iterator[str]:
    """The route to the API server that every real cluster gives its pods (the ``kubernetes`` Service) and the
    embedded cluster's real node does not (its pods reach each other, the kubelet and CoreDNS on the node's address,
    nothing else; the API server listens on 127.0.0.1): a TLS relay on the node's ``address`` for the start watch
    (``startWatch.apiServer``). It serves a certificate for that address signed by the cluster CA (the one in the
    pods' service account ``ca.crt``), and passes each connection, TLS again, to ``server``; the pod's own token
    authenticates it there. Yields the relay's URL; it stops with the block."""
    from dlcharts.host import pki

    certs = state_dir / "api-relay"
    ca = pki.sign(state_dir, certs / "tls.crt", certs / "tls.key", "/CN=dlcharts-api-relay", [f"IP:{address}"])
    serving = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    serving.load_cert_chain(certs / "tls.crt", certs / "tls.key")
    upstream = ssl.create_default_context(cafile=str(ca))
    target = urllib.parse.urlsplit(server)
    host, port = target.hostname or "127.0.0.1", target.port or 443
    listener = socket.create_server((address, 0))
    listener.settimeout(0.5)
    stop = threading.Event()

    def relay(conn: socket.socket) -> None:
        with contextlib.ExitStack() as stack:
            stack.callback(conn.close)
            try:
                conn.settimeout(30)
                pod = stack.enter_context(serving.wrap_socket(conn, server_side=True))
                api = stack.enter_context(
                    upstream.wrap_socket(socket.create_connection((host, port), timeout=30), server_hostname=host)
                )
                _pump(pod, api, stop)
            except (OSError, ValueError):
                return

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=relay, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"https://{address}:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(timeout=2)
        listener.close()


def _pump(pod: ssl.SSLSocket, api: ssl.SSLSocket, stop: threading.Event) -> None:
    """Pass what each end of a relayed connection sends to the other, until one closes, neither sends for 60 s, or
    ``stop`` is set."""
    ends = (pod, api)
    for end in ends:  # a TLS record without data (a TLS 1.3 session ticket) must not block a read
        end.setblocking(False)
    while not stop.is_set():
        ready = [s for s in ends if s.pending()] or select.select(ends, [], [], 60)[0]
        if not ready:
            return
        for end in ready:
            try:
                data = end.recv(65536)
            except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
                continue
            if not data:
                return
            other = api if end is pod else pod
            other.settimeout(30)
            other.sendall(data)
            other.setblocking(False)
