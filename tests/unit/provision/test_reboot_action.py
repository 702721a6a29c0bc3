"""The role's reboot action (playbooks/roles/netroot_board/action_plugins/netroot_reboot.py):
Ansible's reboot, probing a rebooting board at a steady pace instead of backing off to 12 s."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest
from ansible.errors import AnsibleConnectionFailure
from ansible.plugins.action.reboot import TimedOutException

PLUGIN = (
    Path(__file__).resolve().parents[3]
    / "playbooks/roles/netroot_board/action_plugins/netroot_reboot.py"
)


def _plugin() -> ModuleType:
    spec = importlib.util.spec_from_file_location("netroot_reboot", PLUGIN)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Clock:
    """time.monotonic and time.sleep of the plugin, without waiting."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def _action(monkeypatch: pytest.MonkeyPatch, **args: Any) -> tuple[Any, Clock, list[str]]:
    module = _plugin()
    clock = Clock()
    monkeypatch.setattr(module, "time", clock)
    resets: list[str] = []
    action = object.__new__(module.ActionModule)  # no task executor: only the probe loop runs
    action._task = SimpleNamespace(args=args, action="netroot_reboot")
    action._connection = SimpleNamespace(reset=lambda: resets.append("reset"))
    return action, clock, resets


def test_a_board_back_after_35_s_is_seen_within_one_probe_interval_of_the_tasks_pace(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    action, clock, resets = _action(monkeypatch, probe_interval=3)

    def probe(distribution: object) -> None:
        clock.now += 0.5  # a probe's own round trip
        if clock.now < 35:
            raise AnsibleConnectionFailure("ssh: connect to host: No route to host")

    action.do_until_success_or_timeout(probe, 600, "last boot time check", None)
    assert 35 <= clock.now <= 35 + 3 + 0.5
    assert set(clock.sleeps) == {3.0}  # the same pace throughout, no back-off
    assert resets and len(resets) == len(clock.sleeps)  # a failed connection is reset, as before


def test_the_default_pace_is_two_seconds_and_a_timeout_names_the_last_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    action, clock, _ = _action(monkeypatch)

    def probe(distribution: object) -> None:
        raise ValueError("boot time has not changed")

    with pytest.raises(TimedOutException, match=r"timeout=30\).*boot time has not changed"):
        action.do_until_success_or_timeout(probe, 30, "last boot time check", None)
    assert set(clock.sleeps) == {2.0} and clock.now == pytest.approx(30)


def test_the_pace_is_an_argument_of_the_task() -> None:
    assert "probe_interval" in _plugin().ActionModule._VALID_ARGS
    assert {
        "reboot_timeout",
        "connect_timeout",
        "reboot_command",
    } <= _plugin().ActionModule._VALID_ARGS


def test_the_builtin_still_probes_through_the_method_this_action_replaces() -> None:
    """A future ansible-core that renamed the loop would fall back to its back-off unnoticed."""
    import inspect

    from ansible.plugins.action.reboot import ActionModule as RebootAction

    assert "self.do_until_success_or_timeout(" in inspect.getsource(RebootAction.validate_reboot)
    assert _plugin().ActionModule.do_until_success_or_timeout is not (
        RebootAction.do_until_success_or_timeout
    )


def test_the_boards_reboot_runs_no_setup_module(monkeypatch: pytest.MonkeyPatch) -> None:
    """The role's task gives an absolute reboot command and a boot-time command: the builtin's
    setup run (to pick a distribution's commands) is skipped, and the commands it would have
    picked are the ones the task gives, and `whoami` to test the board is back."""
    action, _, _ = _action(
        monkeypatch,
        reboot_command="/usr/sbin/reboot --no-wall",
        boot_time_command="cat /proc/sys/kernel/random/boot_id",
    )

    def no_module(**kwargs: object) -> None:
        raise AssertionError(f"a module ran: {kwargs.get('module_name')}")

    action._execute_module = no_module
    distribution = action.get_distribution({})
    assert action.get_shutdown_command({}, distribution) == "/usr/sbin/reboot"
    assert action.get_shutdown_command_args(distribution) == "--no-wall"
    pick = action._get_value_from_facts
    assert pick("TEST_COMMANDS", distribution, "DEFAULT_TEST_COMMAND") == "whoami"
    assert pick("BOOT_TIME_COMMANDS", distribution, "DEFAULT_BOOT_TIME_COMMAND") == (
        action.DEFAULT_BOOT_TIME_COMMAND
    )


@pytest.mark.parametrize(
    "args",
    [
        {"boot_time_command": "cat /proc/sys/kernel/random/boot_id"},  # no reboot command
        {"reboot_command": "reboot", "boot_time_command": "cat /x"},  # found on the board's PATH
        {"reboot_command": "/usr/sbin/reboot"},  # the boot-time command from the distribution
    ],
)
def test_otherwise_the_builtin_asks_the_board(
    monkeypatch: pytest.MonkeyPatch, args: dict[str, str]
) -> None:
    action, _, _ = _action(monkeypatch, **args)
    ran: list[object] = []

    def setup(**kwargs: object) -> dict[str, object]:
        ran.append(kwargs.get("module_name"))
        facts = {"ansible_distribution": "Debian", "ansible_distribution_version": "12.8"}
        return {"ansible_facts": {**facts, "ansible_os_family": "Debian"}}

    action._execute_module = setup
    assert action.get_distribution({}) == {"name": "debian", "version": "12", "family": "debian"}
    assert ran == ["ansible.legacy.setup"]
