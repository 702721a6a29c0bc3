"""Ansible's reboot action, probing a rebooting board at a steady pace instead of backing off.

`ansible.builtin.reboot` waits between its "back yet?" probes 1, 2, 4, 8, then 12 s: a board
back after 35 s is seen at about 47 s, plus a probe's connect timeout. A role's reboot task here
waits for one board while the others of its batch wait too, so every second of that overshoot is
paid once per reboot round of a rollout. This is the same action (same arguments, boot id check,
connection reset, timeout and result) with one more argument, `probe_interval` (seconds between
probes, default 2): a probe that is sent while the board is between kernels still connects as
soon as it is back (TCP retries the SYN), so a steady short pace costs nothing but a few cheap
connection attempts.
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


class ActionModule(RebootAction):  # type: ignore[misc]
    _VALID_ARGS = RebootAction._VALID_ARGS | frozenset(("probe_interval",))

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
