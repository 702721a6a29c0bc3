"""Talking to a board's QEMU human monitor (HMP) over its unix socket."""

from __future__ import annotations

import socket
import time
from pathlib import Path

PROMPT = b"(qemu) "


def _read_prompt(sock: socket.socket, deadline: float) -> bytes:
    buf = b""
    while not buf.endswith(PROMPT):
        sock.settimeout(max(0.1, deadline - time.monotonic()))
        chunk = sock.recv(65536)
        if not chunk:
            break
        buf += chunk
        if time.monotonic() > deadline:
            raise TimeoutError("qemu monitor did not answer")
    return buf


def hmp(path: Path, commands: list[str], timeout: float = 120.0) -> list[str]:
    """Run monitor commands in order; returns each one's output (prompt and echo stripped)."""
    outputs = []
    deadline = time.monotonic() + timeout
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(5)
        sock.connect(str(path))
        _read_prompt(sock, deadline)
        for cmd in commands:
            sock.sendall(cmd.encode() + b"\n")
            if cmd == "quit":
                outputs.append("")
                break
            raw = _read_prompt(sock, deadline).decode(errors="replace")
            outputs.append(clean(raw, cmd))
    return outputs


def clean(raw: str, cmd: str) -> str:
    """Strip the terminal escapes, the echoed command and the prompt from HMP output (pure)."""
    text = raw.replace("\r", "")
    while "\x1b[" in text:
        start = text.index("\x1b[")
        end = start + 2
        while end < len(text) and not text[end].isalpha():
            end += 1
        text = text[:start] + text[end + 1 :]
    text = text.removesuffix(PROMPT.decode())
    lines = [ln for ln in text.split("\n") if ln.strip() and ln.strip() != cmd]
    return "\n".join(lines)
