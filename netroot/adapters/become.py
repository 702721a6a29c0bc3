"""Whether a host's login user can become root as netroot needs it: without a password, through
the inventory's become settings (sudo -n), never a prompt. The words are pure
(become_problem, sudo_refused); check_privileges asks the hosts."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from netroot.adapters.ssh import Session, TargetError, Unreachable, resolve
from netroot.adapters.sshproc import each_host
from netroot.errors import Exit
from netroot.sshtarget import SshTarget


class BecomeRefused(TargetError):
    """The login user cannot get root without a password: one line naming host and remedy."""

    def __init__(self, target: SshTarget, why: str) -> None:
        super().__init__(target, f"{target.name}: {why}; nothing was changed", "", Exit.USAGE)


def become_problem(target: SshTarget, sudo_rc: int | None, sudo_stderr: str) -> str | None:
    """Why `target` cannot run netroot's privileged commands, or None (pure).

    sudo_rc/sudo_stderr: the result of `sudo -n true` on the host (None when not probed).
    """
    who = f"{target.user}@{target.host}"
    if not target.privileged_ok:
        if not target.become:
            return (
                f"{who} is not root and ansible_become is off: set ansible_become: true "
                f"(with passwordless sudo for {target.user}) or ansible_user: root"
            )
        return (
            f"ansible_become_user is {target.become_user!r}, but netroot needs root on the "
            "host: remove ansible_become_user or set it to root"
        )
    if sudo_rc is None or sudo_rc == 0:
        return None
    said = (sudo_stderr.strip().splitlines() or [f"exit {sudo_rc}"])[-1]
    return (
        f"{who} cannot sudo without a password ({said}): give {target.user} passwordless "
        f"sudo (a line '{target.user} ALL=(ALL) NOPASSWD: ALL' in /etc/sudoers.d/) or use an "
        "ansible_user that has it"
    )


def sudo_refused(target: SshTarget, rc: int, stderr: str) -> str | None:
    """Why sudo refused a privileged command that exited `rc` (pure); None when the login is
    root, or sudo ran the command (whatever the command itself then did).

    sudo's own refusals are its messages ("sudo: a password is required") or a missing sudo.
    """
    if not target.sudo or rc == 0:
        return None
    first = (stderr.strip().splitlines() or [""])[0]
    if first.startswith("sudo:") or (rc == 127 and "sudo" in first):
        return become_problem(target, rc, stderr)
    return None


def check_privileges(targets: Sequence[SshTarget], proven: Collection[str] = ()) -> None:
    """Raise BecomeRefused for the first host whose user cannot become root without a password.

    One `sudo -n true` per host that uses sudo, all at once; hosts reached as root need no
    round trip, nor do the `proven` ones (names of hosts where a command just ran through
    `sudo -n`). Unreachable hosts are left to the operation itself (it reports them).
    """

    def probe(target: SshTarget) -> tuple[SshTarget, str | None]:
        target = resolve(target)
        return target, problem_of(target)

    def problem_of(target: SshTarget) -> str | None:
        if not target.sudo:
            return become_problem(target, None, "")
        if target.name in proven:
            return become_problem(target, 0, "")
        try:
            # One command (never exiting 255): one login, no master beside it.
            with Session(target, multiplex=False) as session:
                res = session.run("sudo -n true", timeout=60)
        except Unreachable:
            return None
        return become_problem(target, res.rc, res.stderr.decode(errors="replace"))

    if not targets:
        return
    problems = each_host(probe, targets, 8)
    for target, problem in problems:
        if problem:
            raise BecomeRefused(target, problem)
