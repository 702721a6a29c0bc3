"""From ansible-runner events to progress and a per-host summary (pure).

Runner events are plain dicts (`event`, `event_data` with `host`, `task`, `res`, ...). The model
keeps per-host counters the way Ansible's recap counts them (ok includes changed), the failures
with their task name and message, and what each host is doing now, so the CLI can show it.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from netroot.errors import Exit, worst
from netroot.sshtarget import SSH_KNOBS, with_meaning

OK_EVENTS = {"runner_on_ok", "runner_item_on_ok"}
FAILED_EVENTS = {"runner_on_failed", "runner_item_on_failed"}


@dataclass
class HostStats:
    ok: int = 0
    changed: int = 0
    failed: int = 0
    unreachable: int = 0
    skipped: int = 0
    rescued: int = 0
    ignored: int = 0

    @property
    def state(self) -> str:
        """One word for the host's outcome."""
        if self.unreachable:
            return "unreachable"
        if self.failed:
            return "failed"
        if self.changed:
            return "changed"
        return "ok"


@dataclass(frozen=True)
class Failure:
    host: str
    task: str
    message: str
    unreachable: bool = False
    items: tuple[str, ...] = ()  # a looped task: each failed item's own message

    @property
    def lines(self) -> tuple[str, ...]:
        """What to tell the user: one line per failed item, else the message."""
        return self.items or (self.message,)


@dataclass(frozen=True)
class Change:
    """One --diff entry: what a task changed (or would change) on a host."""

    host: str
    task: str
    diff: str


def _diff_text(diff: Mapping[str, Any]) -> str:
    if "prepared" in diff:
        return str(diff["prepared"])
    before, after = diff.get("before", ""), diff.get("after", "")
    if not isinstance(before, str) or not isinstance(after, str):
        return f"- {before!r}\n+ {after!r}\n" if before != after else ""
    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        str(diff.get("before_header", "before")),
        str(diff.get("after_header", "after")),
    )
    return "".join(lines)


@dataclass
class Progress:
    """What the UI shows: the current play/task and each host's last result."""

    play: str = ""
    task: str = ""
    tasks_started: int = 0
    last: dict[str, str] = field(default_factory=dict)  # host -> "ok: task" / "changed: task"


def _item_messages(res: Mapping[str, Any]) -> list[str]:
    """Each failed item's own message, labelled with its item unless the message names it."""
    results = res.get("results")
    if not isinstance(results, list):
        return []
    messages = []
    for item in results:
        if not isinstance(item, Mapping) or not item.get("failed"):
            continue
        message = _message(item)
        label = str(item.get("_ansible_item_label", item.get("item", ""))).strip()
        if label and label not in message:
            message = f"{label}: {message}"
        if message not in messages:
            messages.append(message)
    return messages


def _message(res: Mapping[str, Any]) -> str:
    """The most useful line of a failed result: msg, else stderr, else the module's output."""
    # A looped task's own msg is only "One or more items failed": the items say what and why.
    items = _item_messages(res)
    if items:
        return "; ".join(items)
    # raw/command failures say only "non-zero return code" in msg: their stderr says why.
    generic = str(res.get("msg", "")).strip() in ("", "non-zero return code")
    stderr = [
        line
        for line in str(res.get("stderr", "")).splitlines()
        if line.strip() and not line.startswith("Shared connection to ")
    ]
    if generic and stderr:
        return " ".join(" ".join(stderr[-3:]).split())
    # template/copy's `validate` says only this in msg; the validator's stderr says why.
    if str(res.get("msg", "")).strip() == "failed to validate" and stderr:
        return "failed to validate: " + " ".join(" ".join(stderr[-3:]).split())
    # raw runs through a pty: the script's stderr arrives in stdout; its last line says why.
    stdout = [line for line in str(res.get("stdout", "")).splitlines() if line.strip()]
    if generic and stdout:
        return " ".join(stdout[-1].split())
    for key in ("msg", "stderr", "module_stderr", "stdout", "module_stdout", "reason"):
        value = res.get(key)
        if isinstance(value, str) and value.strip():
            return " ".join(value.strip().split())
        if isinstance(value, list) and value:
            return " ".join(str(v) for v in value)
    return "failed (no message)"


_BECOME_TIMEOUT = re.compile(r"Timeout \((\d+)s\) waiting for privilege escalation prompt")


def explain_unreachable(message: str) -> str:
    """Ansible's unreachable message with what it means for a board and what to do.

    A timeout is a host that answered too slowly (loaded, booting), not one that is down: say
    so, and name the inventory settings that give it more time.
    """
    match = _BECOME_TIMEOUT.search(message)
    if match:
        return (
            f"the host accepted SSH but sudo gave no answer within {match.group(1)} s: it is "
            f"busy (booting, or emulated on a loaded machine), not down; give it more time with "
            f"{SSH_KNOBS} in the inventory"
        )
    return with_meaning(message)


@dataclass
class Summary:
    """Per-host counters and failures, built from events (and corrected by the final stats)."""

    hosts: dict[str, HostStats] = field(default_factory=dict)
    failures: list[Failure] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)
    progress: Progress = field(default_factory=Progress)
    final_stats: bool = False
    # Hosts that were rebooted and did not come back in time: Ansible's recap counts them as
    # failed, but for netroot (and a rollout's budget) such a board is unreachable.
    lost: set[str] = field(default_factory=set)

    def host(self, name: str) -> HostStats:
        return self.hosts.setdefault(name, HostStats())

    def apply(self, event: Mapping[str, Any]) -> None:
        """Fold one runner event into the summary."""
        kind = str(event.get("event", ""))
        data = event.get("event_data") or {}
        if not isinstance(data, Mapping):
            return
        if kind == "playbook_on_play_start":
            self.progress.play = str(data.get("play", ""))
        elif kind == "playbook_on_task_start":
            self.progress.task = str(data.get("task", ""))
            self.progress.tasks_started += 1
        elif kind == "playbook_on_stats":
            self._apply_stats(data)
        elif kind.startswith("runner_on_") and not self.final_stats:
            self._apply_result(kind, data)

    def _apply_result(self, kind: str, data: Mapping[str, Any]) -> None:
        name = str(data.get("host", ""))
        if not name:
            return
        stats = self.host(name)
        task = str(data.get("task", ""))
        res = data.get("res") or {}
        res = res if isinstance(res, Mapping) else {}
        if kind == "runner_on_start":
            self.progress.last[name] = f"running: {task}"
            return
        if kind == "runner_on_ok":
            stats.ok += 1
            changed = bool(res.get("changed"))
            stats.changed += int(changed)
            self._collect_diff(name, task, res)
            self.progress.last[name] = f"{'changed' if changed else 'ok'}: {task}"
        elif kind == "runner_on_skipped":
            stats.skipped += 1
            self.progress.last[name] = f"skipped: {task}"
        elif kind == "runner_on_unreachable":
            stats.unreachable += 1
            message = explain_unreachable(_message(res))
            self.failures.append(Failure(name, task, message, unreachable=True))
            self.progress.last[name] = f"unreachable: {task}"
        elif kind == "runner_on_failed":
            if data.get("ignore_errors"):
                stats.ignored += 1
                return
            if res.get("rebooted"):  # ansible.builtin.reboot timed out waiting for the host
                self.lost.add(name)
                stats.unreachable += 1
                self.failures.append(Failure(name, task, _message(res), unreachable=True))
                self.progress.last[name] = f"unreachable: {task}"
                return
            stats.failed += 1
            items = tuple(_item_messages(res))
            self.failures.append(Failure(name, task, _message(res), items=items))
            self.progress.last[name] = f"failed: {task}"

    def _collect_diff(self, host: str, task: str, res: Mapping[str, Any]) -> None:
        diffs = res.get("diff")
        items = diffs if isinstance(diffs, list) else [diffs] if isinstance(diffs, Mapping) else []
        for item in res.get("results") or []:
            if isinstance(item, Mapping) and isinstance(item.get("diff"), (list, Mapping)):
                d = item["diff"]
                items.extend(d if isinstance(d, list) else [d])
        for diff in items:
            text = _diff_text(diff) if isinstance(diff, Mapping) else ""
            if text.strip():
                self.changes.append(Change(host, task, text))
        # The board role's raw script prints `diff -u` output itself (--diff): keep those hunks.
        stdout = res.get("stdout")
        if not items and isinstance(stdout, str) and "\n+++ " in stdout:
            lines = stdout.splitlines(keepends=True)
            start = next((i for i, line in enumerate(lines) if line.startswith("--- ")), None)
            if start is not None:
                hunks = [line for line in lines[start:] if not line.startswith("changed: ")]
                self.changes.append(Change(host, task, "".join(hunks)))

    def _apply_stats(self, data: Mapping[str, Any]) -> None:
        # Ansible's own recap is the authority (it knows about rescued blocks, for instance).
        keys = {
            "ok": "ok",
            "changed": "changed",
            "failures": "failed",
            "dark": "unreachable",
            "skipped": "skipped",
            "rescued": "rescued",
            "ignored": "ignored",
        }
        counts: dict[str, dict[str, int]] = {}
        for key, attr in keys.items():
            per_host = data.get(key) or {}
            if isinstance(per_host, Mapping):
                for name, n in per_host.items():
                    counts.setdefault(str(name), {})[attr] = int(n)
        for name, values in counts.items():
            if name in self.lost and values.get("failed"):
                values["unreachable"] = values.get("unreachable", 0) + values.pop("failed")
            self.hosts[name] = HostStats(**values)
        # A failure inside a block that was rescued is not the host's outcome.
        self.failures = [
            f
            for f in self.failures
            if f.host in self.hosts and self.hosts[f.host].state in ("failed", "unreachable")
        ]
        self.final_stats = True

    @property
    def exit_code(self) -> Exit:
        """1 when a host failed, 4 when hosts were only unreachable, else 0 (errors.worst)."""
        per_host = {"failed": Exit.FAILED, "unreachable": Exit.UNREACHABLE}
        return worst(per_host.get(s.state, Exit.OK) for s in self.hosts.values())

    def as_dict(self) -> dict[str, Any]:
        """The --json form."""
        return {
            "hosts": {
                name: {**vars(stats), "state": stats.state}
                for name, stats in sorted(self.hosts.items())
            },
            "failures": [vars(f) for f in self.failures],
            "changes": [vars(c) for c in self.changes],
            "exit_code": int(self.exit_code),
        }
