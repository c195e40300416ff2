"""A small real SMTP server on a loopback port that keeps what it receives.

It speaks enough of RFC 5321 for ``smtplib`` (EHLO/HELO, MAIL, RCPT, DATA, RSET, NOOP,
QUIT) over a real socket; no TLS, no AUTH. ``running_silent_smtp_server`` is its hostile
twin: it accepts connections and never says a word.
"""

from __future__ import annotations

import socketserver
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email import message_from_bytes, policy
from email.message import EmailMessage


@dataclass
class SmtpInbox:
    """What the server received, and where it listens."""

    host: str
    port: int
    messages: list[EmailMessage] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def received(self) -> list[EmailMessage]:
        """A copy of the messages received so far."""
        with self.lock:
            return list(self.messages)


def _handler(inbox: SmtpInbox) -> type[socketserver.StreamRequestHandler]:
    class SmtpHandler(socketserver.StreamRequestHandler):
        def reply(self, line: str) -> None:
            self.wfile.write(f"{line}\r\n".encode())

        def handle(self) -> None:
            self.reply("220 gridweave-test-smtp ready")
            while raw := self.rfile.readline():
                verb = raw.decode().strip().split(" ", 1)[0].upper()
                if verb == "EHLO":
                    self.reply("250-gridweave-test-smtp")
                    self.reply("250 8BITMIME")
                elif verb in {"HELO", "MAIL", "RCPT", "RSET", "NOOP"}:
                    self.reply("250 OK")
                elif verb == "DATA":
                    self.reply("354 end with <CRLF>.<CRLF>")
                    self.receive_data()
                    self.reply("250 OK queued")
                elif verb == "QUIT":
                    self.reply("221 bye")
                    return
                else:
                    self.reply("502 not implemented")

        def receive_data(self) -> None:
            lines: list[bytes] = []
            while (line := self.rfile.readline()) not in (b".\r\n", b""):
                lines.append(line[1:] if line.startswith(b"..") else line)
            message = message_from_bytes(b"".join(lines), policy=policy.default)
            assert isinstance(message, EmailMessage)
            with inbox.lock:
                inbox.messages.append(message)

    return SmtpHandler


@contextmanager
def running_smtp_server() -> Iterator[SmtpInbox]:
    """An SMTP server on 127.0.0.1 (a free port) for the duration of the block."""
    inbox = SmtpInbox(host="127.0.0.1", port=0)
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _handler(inbox))
    server.daemon_threads = True
    inbox.port = int(server.server_address[1])
    thread = threading.Thread(target=server.serve_forever, name="smtp", daemon=True)
    thread.start()
    try:
        yield inbox
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@dataclass
class SilentServer:
    """Where the silent server listens, and how many connections it has taken."""

    host: str
    port: int
    connections: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def accepted(self) -> int:
        """Connections taken so far."""
        with self.lock:
            return self.connections


@contextmanager
def running_silent_smtp_server() -> Iterator[SilentServer]:
    """A server on 127.0.0.1 that accepts SMTP connections and never answers (hangs)."""
    silent = SilentServer(host="127.0.0.1", port=0)

    class SilentHandler(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            with silent.lock:
                silent.connections += 1
            while self.request.recv(4096):  # until the client gives up and closes
                pass

    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), SilentHandler)
    server.daemon_threads = True
    silent.port = int(server.server_address[1])
    thread = threading.Thread(target=server.serve_forever, name="silent-smtp", daemon=True)
    thread.start()
    try:
        yield silent
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
