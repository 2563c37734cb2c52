"""The page and the service listen as soon as they announce their address: a client that connects the moment
the URL is printed (or the port file written) is queued, not refused (CI saw ``refind ui --no-token`` refuse
the first GET: the URL was printed after bind and before uvicorn's listen)."""

from __future__ import annotations

import socket

import pytest


@pytest.mark.parametrize("front", ["ui", "server"])
def test_a_bound_socket_accepts_a_connection_before_the_server_runs(front: str) -> None:
    if front == "ui":
        from refind.ui import _bind
    else:
        from refind.server import _bind

    sock = _bind("127.0.0.1", 0)
    try:
        with socket.create_connection(sock.getsockname()[:2], timeout=5) as client:
            accepted, _ = sock.accept()
            with accepted:
                client.sendall(b"x")
                assert accepted.recv(1) == b"x"
    finally:
        sock.close()
