"""The event -> summary model, from events recorded in real runs (tests/integration, trimmed to
the fields the model reads: NETROOT_RECORD_EVENTS=DIR makes the integration tests save them)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from netroot.errors import Exit
from netroot.provision.progress import Summary

FIXTURES = Path(__file__).parents[1] / "fixtures"


def _events(name: str) -> list[dict[str, Any]]:
    data = json.loads((FIXTURES / f"provision_events_{name}.json").read_text())
    assert isinstance(data, list)
    return data


def summarize(events: list[dict[str, Any]]) -> Summary:
    """A whole recorded run fed to the model event by event, as provision() feeds it."""
    summary = Summary()
    for event in events:
        summary.apply(event)
    return summary


def test_board_down_is_unreachable_and_the_server_completes() -> None:
    summary = summarize(_events("unreachable"))
    assert summary.hosts["nfs-t"].state == "changed"
    assert summary.hosts["nfs-t"].failed == 0
    assert summary.hosts["pi-a"].state == summary.hosts["pi-b"].state == "unreachable"
    assert {(f.host, f.unreachable) for f in summary.failures} == {("pi-a", True), ("pi-b", True)}
    assert all("No route to host" in f.message for f in summary.failures)
    assert summary.exit_code == Exit.UNREACHABLE


def test_second_run_reports_nothing_changed() -> None:
    summary = summarize(_events("ganesha_idempotent"))
    assert summary.hosts["nfs-t"].changed == 0
    assert summary.hosts["nfs-t"].ok > 5
    assert summary.failures == []
    assert summary.exit_code == Exit.OK


def test_failed_task_is_named_with_its_message() -> None:
    summary = summarize(_events("validate_failed"))
    assert summary.exit_code == Exit.FAILED
    [failure] = summary.failures
    assert failure.host == "nfs-t"
    assert failure.task == "Exports in /etc/exports (marked block)"
    assert "failed to validate" in failure.message and "not absolute" in failure.message


def test_a_looped_task_reports_each_failed_items_own_message() -> None:
    """Recorded from the server role's per-image check with two images never exported: the
    task's own msg ("One or more items failed") says nothing; each item says what and how."""
    summary = summarize(_events("items_failed"))
    assert summary.exit_code == Exit.FAILED
    [failure] = summary.failures
    assert (failure.host, failure.task) == ("nfs-t", "Check the exports can be served")
    assert len(failure.items) == 2 and failure.lines == failure.items
    for line, image in zip(failure.items, ("img-gone", "img-none"), strict=True):
        assert line.startswith(f"no version of image {image} exported yet"), line
        assert f"run `netroot export SOURCE --name {image}`" in line
    assert "One or more items failed" not in failure.message
    assert all(item in failure.message for item in failure.items)


def test_a_failed_item_without_its_label_in_the_message_is_labelled() -> None:
    summary = Summary()
    item = {"failed": True, "msg": "boom", "item": "/srv/x", "_ansible_item_label": "/srv/x"}
    ok = {"failed": False, "msg": "fine", "item": "a"}
    summary.apply(
        {
            "event": "runner_on_failed",
            "event_data": {
                "host": "pi-01",
                "task": "Loop",
                "res": {"msg": "One or more items failed", "results": [ok, item, dict(item)]},
            },
        }
    )
    [failure] = summary.failures
    assert failure.items == ("/srv/x: boom",)  # the same message twice is said once
    assert failure.message == "/srv/x: boom"


def test_a_failure_without_items_is_one_line() -> None:
    summary = summarize(_events("validate_failed"))
    [failure] = summary.failures
    assert failure.items == () and failure.lines == (failure.message,)


def test_counts_from_events_agree_with_ansibles_recap() -> None:
    for name in ("unreachable", "ganesha_idempotent", "validate_failed", "items_failed"):
        events = _events(name)
        live = Summary()
        for event in events:
            if event["event"] != "playbook_on_stats":
                live.apply(event)
        final = summarize(events)
        for host, stats in final.hosts.items():
            assert live.hosts[host].changed == stats.changed, (name, host)
            assert live.hosts[host].failed == stats.failed, (name, host)
            assert live.hosts[host].unreachable == stats.unreachable, (name, host)


def test_progress_follows_tasks_and_hosts() -> None:
    summary = Summary()
    for event in _events("ganesha_idempotent")[:12]:
        summary.apply(event)
    assert summary.progress.play == "NFS server"
    assert summary.progress.tasks_started > 0
    assert "nfs-t" in summary.progress.last


def test_diff_of_a_changed_file_is_collected() -> None:
    summary = Summary()
    summary.apply(
        {
            "event": "runner_on_ok",
            "event_data": {
                "host": "nfs-01",
                "task": "Exports",
                "res": {
                    "changed": True,
                    "diff": [{"before": "a\n", "after": "a\nb\n", "before_header": "/etc/exports"}],
                },
            },
        }
    )
    [change] = summary.changes
    assert change.host == "nfs-01" and "+b" in change.diff
    assert summary.as_dict()["changes"][0]["task"] == "Exports"


def test_ignored_and_rescued_failures_are_not_the_outcome() -> None:
    summary = Summary()
    summary.apply({"event": "runner_on_failed", "event_data": {"host": "h", "task": "t",
                   "ignore_errors": True, "res": {"msg": "x"}}})  # fmt: skip
    assert summary.failures == [] and summary.hosts["h"].ignored == 1
    summary.apply({"event": "runner_on_failed", "event_data": {"host": "h", "task": "block",
                   "res": {"msg": "rescued"}}})  # fmt: skip
    summary.apply(
        {"event": "playbook_on_stats", "event_data": {"ok": {"h": 3}, "rescued": {"h": 1}}}
    )
    assert summary.failures == [] and summary.exit_code == Exit.OK


def test_diff_printed_by_the_board_script_is_collected() -> None:
    stdout = (
        "--- /etc/netroot/assigned (before)\n+++ /etc/netroot/assigned (after)\n"
        "@@ -1 +1 @@\n-aaaa\n+bbbb\nchanged: /etc/netroot/assigned (check mode: not written)\n"
    )
    summary = Summary()
    summary.apply(
        {
            "event": "runner_on_ok",
            "event_data": {
                "host": "pi-01",
                "task": "Install",
                "res": {"changed": True, "stdout": stdout},
            },
        }
    )
    [change] = summary.changes
    assert "+bbbb" in change.diff and "changed:" not in change.diff


def test_a_board_not_back_after_its_reboot_is_unreachable() -> None:
    reboot_timeout = {
        "event": "runner_on_failed",
        "event_data": {
            "host": "pi-a",
            "task": "Reboot for the new boot config",
            "res": {
                "failed": True,
                "rebooted": True,
                "msg": "Timed out waiting for last boot time check (timeout=600)",
            },
        },
    }
    stats = {
        "event": "playbook_on_stats",
        "event_data": {"ok": {"pi-a": 5, "pi-b": 6}, "failures": {"pi-a": 1}, "changed": {}},
    }
    summary = summarize([reboot_timeout, stats])
    assert summary.hosts["pi-a"].state == "unreachable"
    assert summary.hosts["pi-b"].state == "ok"
    assert [(f.host, f.unreachable) for f in summary.failures] == [("pi-a", True)]
    assert summary.exit_code == Exit.UNREACHABLE


def test_a_refused_template_validation_says_why() -> None:
    # ansible.builtin.template with `validate` (the dnsmasq config): msg is only "failed to
    # validate", the validator's stderr has the reason (as in the netboot integration test).
    res = {"msg": "failed to validate", "exit_status": 1, "stdout": "",
           "stderr": "dnsmasq: bad dhcp-range at line 9 of /tmp/.ansible/tmpx\n"}  # fmt: skip
    data = {"host": "nfs-01", "task": "The dnsmasq config", "res": res}
    event = {"event": "runner_on_failed", "event_data": data}
    summary = summarize([event])
    assert summary.failures[0].message == (
        "failed to validate: dnsmasq: bad dhcp-range at line 9 of /tmp/.ansible/tmpx"
    )


def _unreachable(message: str) -> str:
    summary = Summary()
    summary.apply(
        {
            "event": "runner_on_unreachable",
            "event_data": {
                "host": "pi-03",
                "task": "Gather",
                "res": {"msg": message, "unreachable": True, "changed": False},
            },
        }
    )
    [failure] = summary.failures
    assert failure.unreachable and summary.exit_code == Exit.UNREACHABLE
    return failure.message


def test_a_silent_sudo_is_reported_as_a_busy_host_with_the_settings_to_raise() -> None:
    # Ansible's words (plugins/connection/ssh.py) when sudo stays silent past timeout + 2 s.
    message = _unreachable("Timeout (32s) waiting for privilege escalation prompt: ")
    assert message.startswith("the host accepted SSH but sudo gave no answer within 32 s")
    assert "not down" in message
    assert "ansible_ssh_timeout" in message and "ansible_ssh_retries" in message


def test_a_slow_ssh_answer_keeps_sshs_words_and_adds_what_to_do() -> None:
    ssh = "Failed to connect to the host via ssh: Connection timed out during banner exchange"
    message = _unreachable(ssh)
    assert message.startswith(ssh) and "ansible_ssh_timeout" in message


def test_a_host_that_is_off_or_refuses_keeps_sshs_words_and_says_which() -> None:
    off = "Failed to connect to the host via ssh: ssh: connect to host 10.77.0.13 port 22: "
    message = _unreachable(off + "No route to host")
    assert message.startswith(off) and "powered off" in message and "ansible_host" in message
    message = _unreachable(off + "Connection refused")
    assert message.startswith(off) and "sshd" in message and "powered off" not in message
    other = "Failed to connect to the host via ssh: Permission denied (publickey)."
    assert _unreachable(other) == other


def test_netroots_own_ssh_and_ansible_say_the_same_of_the_same_failure() -> None:
    from netroot.adapters.ssh import Unreachable
    from netroot.sshtarget import SshTarget, unreachable_meaning

    target = SshTarget("pi-01", "10.77.0.11", 22, "pi", None, "/dev/null")
    for said in ("[Errno 113] No route to host", "[Errno 111] Connection refused"):
        meaning = unreachable_meaning(said)
        assert meaning is not None
        ansible = _unreachable("Failed to connect to the host via ssh: ssh: connect: " + said)
        assert ansible.endswith(f"({meaning})")
        assert Unreachable(target, said).message.endswith(f"{said} ({meaning})")
    refused_login = "Authentication failed."
    assert Unreachable(target, refused_login).message.endswith(f"unreachable: {refused_login}")
