"""`export`, `versions`, `verify` and `prune` when the inventory lists several NFS servers.

Each server holds its own versions and its own `current`; these commands work on every
server (an export: every server that serves a board of the image) and show each one's part.
A server that fails (down, full) is shown beside the others and makes the command exit with
its code (4 unreachable, 5 disk full, ...) once the others are done: nothing is undone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from netroot.cli.context import AppContext
from netroot.errors import Exit, NetrootError
from netroot.inventory import Inventory, NfsServer


def servers_for_image(inv: Inventory, name: str) -> list[NfsServer]:
    """The servers an export of NAME goes to: those serving a board of that image, else all."""
    serving = inv.servers_for(b for b in inv.boards.values() if b.image == name)
    return serving or list(inv.servers.values())


def _fail_if_any(failed: dict[str, NetrootError], what: str) -> None:
    if not failed:
        return
    from netroot.export.fanout import exit_code

    reasons = "; ".join(f"{n}: {e.message}" for n, e in failed.items())
    raise NetrootError(
        f"{what} failed on {', '.join(failed)}: {reasons}",
        "the other servers are done; run the command again once those are back",
        exit_code(failed.values()),
    )


def export(
    app: AppContext, servers: list[NfsServer], info: Any, apply: Callable[[Any], Any],
    name: str, options: Any, as_json: bool,
) -> None:  # fmt: skip
    """Export to every server at once; each server's outcome, then the failures' exit code."""
    from netroot.export.fanout import export_all

    out = export_all(servers, info, apply, name, options)
    rows = {
        s.name: {"ok": False, "error": out.failed[s.name].message}
        if s.name in out.failed
        else {
            "ok": True,
            "noop": out.done[s.name].noop,
            "switched": out.done[s.name].switched,
            "pruned": out.done[s.name].pruned,
            "bytes_sent": out.bytes_sent.get(s.name),
            "path": f"{s.export_root}/{name}/versions/{out.version}",
        }
        for s in servers
    }
    if as_json:
        summary = out.manifest.summary() if out.done else {"version": out.version}
        app.out.json(summary | {"current": out.version, "servers": rows})
    else:
        app.out.table(
            f"export {name} {out.version}",
            ["server", "state", "current", "sent", "path / error"],
            [
                [
                    server,
                    "FAILED" if not r["ok"] else "already there" if r["noop"] else "new version",
                    "-" if not r["ok"] else "moved" if r["switched"] else "unchanged",
                    "-" if r.get("bytes_sent") is None else f"{r['bytes_sent']} bytes",
                    r.get("path") or r["error"],
                ]
                for server, r in rows.items()
            ],
        )
    _fail_if_any(out.failed, f"export of {name} {out.version}")


def versions(app: AppContext, servers: list[NfsServer], name: str, as_json: bool) -> None:
    """Every version of NAME on any server, and which servers hold it (* = their current)."""
    from netroot.export.onservers import each, versions_on

    found = each(servers, lambda s: versions_on(s, name))
    by_id: dict[str, Any] = {}
    holders: dict[str, list[str]] = {}
    shown: dict[str, list[str]] = {}
    for server, (current, manifests) in found.answers.items():
        for m in manifests:
            by_id.setdefault(m.version, m)
            holders.setdefault(m.version, []).append(server)
            shown.setdefault(m.version, []).append(server + ("*" if m.version == current else ""))
    ordered = sorted(by_id.values(), key=lambda m: (m.exported_at, m.version))
    per_server = {
        s.name: {"current": found.answers[s.name][0],
                 "versions": [m.version for m in found.answers[s.name][1]]}
        if s.name in found.answers
        else {"error": found.failed[s.name].message}
        for s in servers
    }  # fmt: skip
    if as_json:
        app.out.json(
            {
                "name": name,
                "versions": [m.summary() | {"servers": holders[m.version]} for m in ordered],
                "servers": per_server,
            }
        )
    else:
        app.out.table(
            f"{name} on {len(servers)} servers (* = that server's current)",
            ["version", "exported (UTC)", "source", "entries", "MiB", "on"],
            [
                [m.version, m.exported_at[:16].replace("T", " "),
                 ",".join(m.repo_tags) or m.source.get("ref", ""), m.files,
                 f"{m.bytes / 2**20:.1f}", " ".join(shown[m.version])]
                for m in ordered
            ],
        )  # fmt: skip
    _fail_if_any(found.failed, f"listing {name}")


def verify(
    app: AppContext, servers: list[NfsServer], name: str, vid: str | None, as_json: bool
) -> None:
    """Re-hash the version on every server that holds NAME; exit 3 when any differs."""
    from netroot.export.onservers import each, verify_on

    found = each(servers, lambda s: verify_on(s, name, vid))
    rows = {s: {"version": v.version, "ok": not v.differences, "tree_hash": v.tree_hash,
                "differences": v.differences} for s, v in found.answers.items()}  # fmt: skip
    failed = {s: e.message for s, e in found.failed.items()}
    if as_json:
        ok = all(r["ok"] for r in rows.values()) and not failed
        app.out.json({"name": name, "ok": ok, "servers": rows, "failed": failed})
    else:
        for server, v in found.answers.items():
            for line in v.differences:
                app.out.out.print(f"{server}: {line}", highlight=False, markup=False)
            if not v.differences:
                app.out.info(f"{server}: {name}@{v.version}: ok ({v.files} entries)")
    bad = [s for s, v in found.answers.items() if v.differences]
    if bad:
        raise NetrootError(
            f"{name}: paths differ from the manifest on {', '.join(bad)}",
            f"put it back in place from its source: netroot export SOURCE --name {name} --repair",
            Exit.CHECKS,
        )
    _fail_if_any(found.failed, f"verifying {name}")
