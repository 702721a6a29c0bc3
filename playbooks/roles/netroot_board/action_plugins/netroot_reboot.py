"""Ansible's reboot action, probing a rebooting board at a steady pace instead of backing off.

`ansible.builtin.reboot` waits between its "back yet?" probes 1, 2, 4, 8, then 12 s: a board
back after 35 s is seen at about 47 s, plus a probe's connect timeout. A role's reboot task here
waits for one board while the others of its batch wait too, so every second of that overshoot is
paid once per reboot round of a rollout. This is the same action (same arguments, boot id check,
connection reset, timeout and result) with one more argument, `probe_interval` (seconds between
probes, default 2): a probe that is sent while the board is between kernels still connects as
soon as it is back (TCP retries the SYN), so a steady short pace costs nothing but a few cheap
connection attempts.

It also skips the builtin's first step when the task says everything the step is for: the
builtin runs the `setup` module on the board (facts, gather_subset=min) only to pick a
distribution's shutdown, boot-time and test commands; a task that gives an absolute
`reboot_command` and a `boot_time_command`, as the board role's do, needs none of them but the
test command, which is `whoami` for every Linux (the builtin's own default). That module run is
one of the three steps (SSH login, setup, the boot id through sudo) of the 13.6-15.4 s a lab
board's reboot task took before its reboot command (bench/README.md, "A reboot's detection");
its share was not measured.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

from ansible.errors import AnsibleConnectionFailure
from ansible.plugins.action.reboot import ActionModule as RebootAction
from ansible.plugins.action.reboot import TimedOutException
from ansible.utils.display import Display

display = Display()

DEFAULT_PROBE_INTERVAL = 2.0
# What the builtin's setup run says of Raspberry Pi OS (Debian): its tables have no entry for
# it, so every command it would look up is its Linux default.
DEBIAN = {"name": "debian", "version": "", "family": "debian"}


class ActionModule(RebootAction):  # type: ignore[misc]
    _VALID_ARGS = RebootAction._VALID_ARGS | frozenset(("probe_interval",))

    def get_distribution(self, task_vars: dict[str, Any]) -> dict[str, str]:
        args = self._task.args
        command = str(args.get("reboot_command") or "")
        if command.startswith("/") and args.get("boot_time_command"):
            return dict(DEBIAN)  # no setup run: nothing it finds would be used
        distribution: dict[str, str] = super().get_distribution(task_vars)
        return distribution

    def do_until_success_or_timeout(
        self,
        action: Callable[..., Any],
        reboot_timeout: int,
        action_desc: str,
        distribution: Any,
        action_kwargs: dict[str, Any] | None = None,
    ) -> None:
        interval = float(self._task.args.get("probe_interval", DEFAULT_PROBE_INTERVAL))
        deadline = time.monotonic() + reboot_timeout
        last_error = ""
        while time.monotonic() < deadline:
            try:
                action(distribution=distribution, **(action_kwargs or {}))
                return
            except Exception as e:  # the builtin's contract: any failure is "not yet"
                if isinstance(e, AnsibleConnectionFailure):
                    with contextlib.suppress(AnsibleConnectionFailure):
                        self._connection.reset()
                lines = str(e).splitlines()
                last_error = lines[-1] if lines else type(e).__name__
                if action_desc:
                    display.vvv(f"{action_desc} failed: {last_error}; again in {interval:g} s")
                time.sleep(min(interval, max(0.0, deadline - time.monotonic())))
        raise TimedOutException(
            f"Timed out waiting for {action_desc} (timeout={reboot_timeout})"
            + (f": {last_error}" if last_error else "")
        )
