"""The NFS client's RPC counters (/proc/net/rpc/nfs, what `nfsstat -c` reads): parse two
snapshots and say what happened between them (pure).

A board reads the file before and after something (a boot, an `import torch`); the difference is
the round trips that something cost the network: each counted call is one RPC to the server (an
NFSv4 COMPOUND counts once, under the operation it is for). The lines this reads:

    rpc CALLS RETRANS AUTHREFRESH
    proc3 N C0 C1 ... C(N-1)       one count per NFSv3 procedure, in RFC 1813's order
    proc4 N C0 C1 ... C(N-1)       one per NFSv4 client operation, in the kernel's order
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

# RFC 1813's procedure numbers; nfsstat(8) prints them under these names.
PROC3 = (
    "null", "getattr", "setattr", "lookup", "access", "readlink", "read", "write", "create",
    "mkdir", "symlink", "mknod", "remove", "rmdir", "rename", "link", "readdir", "readdirplus",
    "fsstat", "fsinfo", "pathconf", "commit",
)  # fmt: skip
# The Linux client's NFSv4 operation numbers (NFSPROC4_CLNT_*, include/linux/nfs4.h), the order
# nfs-utils' nfsstat names them in. Only the first 48 are named: the order after them moved
# between kernels; any later count is still counted, as "op<N>".
PROC4 = (
    "null", "read", "write", "commit", "open", "open_confirm", "open_noattr", "open_downgrade",
    "close", "setattr", "fsinfo", "renew", "setclientid", "setclientid_confirm", "lock", "lockt",
    "locku", "access", "getattr", "lookup", "lookup_root", "remove", "rename", "link", "symlink",
    "create", "pathconf", "statfs", "readlink", "readdir", "server_caps", "delegreturn", "getacl",
    "setacl", "fs_locations", "release_lockowner", "secinfo", "fsid_present", "exchange_id",
    "create_session", "destroy_session", "sequence", "get_lease_time", "reclaim_complete",
    "layoutget", "getdeviceinfo", "layoutcommit", "layoutreturn",
)  # fmt: skip
NAMES = {"proc3": PROC3, "proc4": PROC4}
# Calls that are the client keeping its NFSv4.1 session alive, not the work being measured.
HOUSEKEEPING = frozenset({"v4.sequence", "v4.renew", "v4.null", "v3.null"})


class CountersError(ValueError):
    """The text is not /proc/net/rpc/nfs (no NFS client, or a garbled read)."""


@dataclass(frozen=True)
class ClientCounters:
    """One snapshot: RPC calls and retransmissions, and each operation's count ("v3.getattr")."""

    calls: int
    retrans: int
    ops: Mapping[str, int] = field(default_factory=dict)

    def __sub__(self, before: ClientCounters) -> ClientCounters:
        """What happened since `before` (a later snapshot minus an earlier one)."""
        if self.calls < before.calls:
            raise CountersError(
                "the counters went down between the two reads: the NFS client module was "
                "reloaded (read both snapshots in one boot)"
            )
        ops = {k: n - before.ops.get(k, 0) for k, n in self.ops.items()}
        return ClientCounters(
            self.calls - before.calls,
            self.retrans - before.retrans,
            {k: n for k, n in ops.items() if n},
        )

    def work(self) -> int:
        """Operations less the session's own housekeeping (SEQUENCE and RENEW pings)."""
        return sum(n for k, n in self.ops.items() if k not in HOUSEKEEPING)

    def summary(self, top: int = 6) -> dict[str, object]:
        """A report's view: total calls, the work, and the biggest operations."""
        biggest = sorted(self.ops.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
        return {
            "calls": self.calls,
            "work": self.work(),
            "retrans": self.retrans,
            "top": dict(biggest),
        }


def _ints(words: list[str], line: str) -> list[int]:
    try:
        return [int(w) for w in words]
    except ValueError:
        raise CountersError(f"not a counter line: {line!r}") from None


def parse(text: str) -> ClientCounters:
    """A snapshot from the text of /proc/net/rpc/nfs."""
    calls: int | None = None
    retrans = 0
    ops: dict[str, int] = {}
    for line in text.splitlines():
        words = line.split()
        if not words:
            continue
        if words[0] == "rpc":
            nums = _ints(words[1:], line)
            if len(nums) < 2:
                raise CountersError(f"the rpc line has {len(nums)} numbers, not 3: {line!r}")
            calls, retrans = nums[0], nums[1]
        elif words[0] in NAMES:
            nums = _ints(words[1:], line)
            if not nums or nums[0] != len(nums) - 1:
                raise CountersError(f"{words[0]} says one count per operation, got: {line!r}")
            names, version = NAMES[words[0]], "v" + words[0][4:]
            for i, n in enumerate(nums[1:]):
                ops[f"{version}.{names[i] if i < len(names) else f'op{i}'}"] = n
    if calls is None:
        raise CountersError(
            "no 'rpc' line: not /proc/net/rpc/nfs (is the NFS client loaded on the board?)"
        )
    return ClientCounters(calls, retrans, ops)
