"""Code that runs away from the control host, on the NFS server: the TFTP tree tool (tree,
switch, uboot), the exports checker (nfs_check), the writer's lock (lock, which netroot also
takes on a local export root), and the helpers a remote export root runs (export: verify,
commit, switch, prune; fleet: the fleet state and the lock, per control host session).

Standard library only, plus netroot.errors and netroot.fsutil (stdlib-only themselves and
shipped beside it) and, for the two helpers, the export's manifest modules (idem). The server
has Python but not netroot's dependencies. The role ships the tree tool and the checker
(playbooks/roles/netroot_nfs_server/files: netroot-lib/ and netroot-nfs-check);
netroot.export.remote ships the helpers at each use. tests/unit/core/test_remote.py proves the
import rule. The QPU program sent to the board (netroot/qpu, bundled by qpu/bundle.py) keeps
the same rule.
"""
