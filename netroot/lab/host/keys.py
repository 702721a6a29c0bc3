"""SSH keys the lab generates: its client key and one host key per lab host."""

from __future__ import annotations

from pathlib import Path

from netroot.run import run


def ensure_key(path: Path, comment: str) -> str:
    """An ed25519 key pair at `path` (kept if present); returns the public key line."""
    if not path.exists() or not _pub(path).exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.unlink(missing_ok=True)
        _pub(path).unlink(missing_ok=True)
        run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", path],
            hint="install openssh-client: apt-get install openssh-client",
        )
    path.chmod(0o600)
    return _pub(path).read_text().strip()


def _pub(path: Path) -> Path:
    return path.with_name(path.name + ".pub")
