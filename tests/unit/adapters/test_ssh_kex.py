"""netroot's own SSH sessions put the fast key exchanges first, only where nothing chose one: the
user's ssh config, the system's and the inventory's ssh args keep theirs (fast_kex pure, and
resolve against the real OpenSSH client's `ssh -G`; no server needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from netroot.adapters.ssh import resolve
from netroot.sshtarget import SLOW_KEX, SshTarget, fast_kex, ssh_argv

# OpenSSH 9.2 (Debian 12), 9.9 and 10.0's own lists, as `ssh -F /dev/null -G` prints them.
V92 = (
    "sntrup761x25519-sha512,sntrup761x25519-sha512@openssh.com,curve25519-sha256,"
    "curve25519-sha256@libssh.org,ecdh-sha2-nistp256,diffie-hellman-group14-sha256"
)
V99 = (
    "sntrup761x25519-sha512,sntrup761x25519-sha512@openssh.com,mlkem768x25519-sha256,"
    "curve25519-sha256,curve25519-sha256@libssh.org,ecdh-sha2-nistp256"
)
V100 = (
    "mlkem768x25519-sha256,sntrup761x25519-sha512,sntrup761x25519-sha512@openssh.com,"
    "curve25519-sha256,curve25519-sha256@libssh.org,ecdh-sha2-nistp256"
)


@pytest.mark.parametrize(
    ("default", "first"),
    [(V92, "curve25519-sha256"), (V99, "mlkem768x25519-sha256"), (V100, "mlkem768x25519-sha256")],
)
def test_the_slow_hybrid_goes_behind_the_fast_ones_and_nothing_is_dropped(
    default: str, first: str
) -> None:
    chosen = fast_kex(default, default)
    assert chosen is not None
    names = chosen.split(",")
    assert sorted(names) == sorted(default.split(","))  # a preference order: all still offered
    assert names[0] == first
    assert names[names.index("curve25519-sha256@libssh.org") + 1] in SLOW_KEX
    assert names[-1] == default.split(",")[-1]  # the classic ones keep their places


def test_a_list_someone_chose_is_theirs() -> None:
    assert fast_kex("sntrup761x25519-sha512@openssh.com,curve25519-sha256", V92) is None
    assert fast_kex(V92, "") is None  # the client's default unknown: ssh's own choice
    assert fast_kex("", V92) is None
    plain = "curve25519-sha256,ecdh-sha2-nistp256"
    assert fast_kex(plain, plain) is None  # nothing slow to move


def test_the_chosen_exchanges_are_on_the_command_line_only_when_chosen() -> None:
    target = SshTarget("pi-01", "10.0.0.5", 22, "pi", None, None)
    assert not any(a.startswith("KexAlgorithms=") for a in ssh_argv(target, "/run/c"))
    fast = SshTarget("pi-01", "10.0.0.5", 22, "pi", None, None, kex="curve25519-sha256")
    for control in ("/run/c", None):
        assert "KexAlgorithms=curve25519-sha256" in ssh_argv(fast, control)


def _target(*common: str) -> SshTarget:
    return SshTarget("pi-01", "board.invalid", 22, "pi", None, None, common_args=common)


def test_resolve_asks_ssh_itself_and_keeps_what_the_config_says(tmp_path: Path) -> None:
    """The real client: its own list gets reordered; a config (-F, as ~/.ssh/config would) or
    an inventory arg that names the key exchange for this host is left alone."""
    free = resolve(_target())
    assert free.kex is not None and free.kex.split(",")[0] in (
        "curve25519-sha256",
        "mlkem768x25519-sha256",
    )
    assert resolve(free).kex == free.kex  # resolved again (the preflight, then a session)

    config = tmp_path / "config"
    config.write_text("Host board.invalid\n  KexAlgorithms sntrup761x25519-sha512@openssh.com\n")
    assert resolve(_target("-F", str(config))).kex is None
    config.write_text("Host other.invalid\n  KexAlgorithms curve25519-sha256\n")
    assert resolve(_target("-F", str(config))).kex == free.kex  # another host's rule
    assert resolve(_target("-o", "KexAlgorithms=+diffie-hellman-group14-sha1")).kex is None
