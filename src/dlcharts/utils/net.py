"""Ports on 127.0.0.1, where every local server of the harness listens."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A port nobody listens on now (the kernel's pick; another process may take it before it is used)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def port_free(port: int) -> bool:
    """Whether a server can listen on 127.0.0.1:port (SO_REUSEADDR, as Go's listeners: TIME_WAIT is fine)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True
