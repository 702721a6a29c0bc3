"""The fault soak's summary: its run as a row of bench/README.md's soak table (pure, but for
`commit`, which asks git which code ran)."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

HEADER = (
    "| seed (soak at) | server, boards | minutes (ran) | operations | faults fired "
    "| chosen, not fired (why) | checks | violations |\n|---|---|---|---|---|---|---|---|"
)


def commit() -> str:
    """The repository's commit, `+` when the soak's own files differ from it."""
    repo = Path(__file__).resolve().parents[1]
    try:
        git = ["git", "-C", str(repo)]
        head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()  # fmt: skip
        status = [*git, "status", "--porcelain", "bench", "netroot"]
        dirty = subprocess.run(status, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+" if dirty else "")


def by_kind(counts: Mapping[str, Any]) -> str:
    """`{"rollout": 3, "export": 1}` as "rollout 3, export 1" (most first), "none" when empty."""
    items = sorted(counts.items(), key=lambda kv: (-int(kv[1]), kv[0]))
    return ", ".join(f"{k} {v}" for k, v in items if v) or "none"


def _why(reasons: list[str]) -> str:
    """Each kind's reasons for not firing, counted: "nfs-kill: rollout ended ... (2)"."""
    seen: dict[str, int] = {}
    for r in reasons:
        kind, _, why = r.partition(": ")
        # The exit code and seconds differ each time; the moment is what was waited for.
        key = f"{kind}: {why.split(' before ')[-1] if ' before ' in why else why}"
        seen[key] = seen.get(key, 0) + 1
    return "; ".join(f"{k} ({n})" if n > 1 else k for k, n in seen.items())


def readme_row(result: Mapping[str, Any]) -> str:
    """The run as one row under HEADER (the header first)."""
    fired = by_kind(result.get("faults", {}))
    chosen = sum(int(v) for v in result.get("faults_chosen", {}).values())
    missed = sum(int(v) for v in result.get("faults_not_fired", {}).values())
    why = _why(list(result.get("not_fired_why", [])))
    not_fired = f"{chosen}, {missed} not fired" + (f" ({why})" if why else "")
    violations = result.get("violations", [])
    row = (
        f"| {result['seed']} ({result.get('commit', '?')}) "
        f"| {result.get('server', '?')}, {result.get('boards', '?')} "
        f"| {result['minutes']:g} ({int(result.get('seconds', 0)) / 60:.1f}) "
        f"| {by_kind(result.get('operations', {}))} | {fired} | {not_fired} "
        f"| {result.get('checks', 0)} | {len(violations)}"
        + (": " + "; ".join(str(v) for v in violations) if violations else "")
        + " |"
    )
    notes = result.get("notes", [])
    return HEADER + "\n" + row + ("\nnotes: " + "; ".join(notes) if notes else "")
