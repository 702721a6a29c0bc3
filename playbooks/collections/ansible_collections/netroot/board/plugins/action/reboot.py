"""netroot.board.reboot: ansible.builtin.reboot, paced for boards that run Python slowly.

The same arguments, the same result and the same timeouts as ansible.builtin.reboot; two
things differ, both about time spent while a board reboots:
- No setup module first. The builtin runs `setup` (and `find`, for a reboot_command that is not
  an absolute path) on the board to pick per-distribution defaults; netroot's tasks always give
  reboot_command (absolute) and boot_time_command, so nothing would be picked. On a Pi 3B (or an
  emulated one) each Python module costs seconds.
- "Is it back yet?" asked every `poll_interval` seconds (default 1) until reboot_timeout, not
  with the builtin's back-off (1, 2, 4, 8, then 12 s between probes), which notices a board
  that is back up to 12 s late: on a board that reboots in 20-30 s that is a third again.
Each probe still waits at most connect_timeout to connect, so a board that stays down costs
reboot_timeout, as before.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

from ansible.errors import AnsibleConnectionFailure
from ansible.plugins.action.reboot import ActionModule as BuiltinReboot
from ansible.plugins.action.reboot import TimedOutException


class ActionModule(BuiltinReboot):  # type: ignore[misc]
    _VALID_ARGS = frozenset((*BuiltinReboot._VALID_ARGS, "poll_interval"))

    def get_distribution(self, task_vars: dict[str, Any]) -> dict[str, str]:
        # Every lookup falls back to the builtin's defaults; reboot_command and
        # boot_time_command, which would be looked up, are the task's own.
        if "reboot_command" not in self._task.args:
            return super().get_distribution(task_vars)  # type: ignore[no-any-return]
        return {"name": "", "version": "", "family": ""}

    def do_until_success_or_timeout(
        self,
        action: Any,
        reboot_timeout: int,
        action_desc: str,
        distribution: dict[str, str],
        action_kwargs: dict[str, Any] | None = None,
    ) -> None:
        interval = max(0.2, float(self._task.args.get("poll_interval", 1)))
        deadline = time.monotonic() + reboot_timeout
        last = ""
        while time.monotonic() < deadline:
            try:
                action(distribution=distribution, **(action_kwargs or {}))
                return
            except Exception as e:  # the builtin's loop catches every error the same way
                if isinstance(e, AnsibleConnectionFailure):
                    with contextlib.suppress(AnsibleConnectionFailure):
                        self._connection.reset()
                last = (str(e).splitlines() or [""])[-1]
                time.sleep(interval)
        raise TimedOutException(
            f"Timed out waiting for {action_desc} (timeout={reboot_timeout}); last error: {last}"
        )
