"""Code that runs away from the control host, on the NFS server: the TFTP tree tool (tree,
switch, uboot), the exports checker (nfs_check), the writer's lock (lock, which netroot also
takes on a local export root), the helpers a remote export root runs (export: verify, commit,
switch, prune; fleet: the fleet state and the lock, per control host session), and the loader
of every program sent as source (loader, on the server and on the boards).

Standard library only, plus netroot.errors and netroot.fsutil (stdlib-only themselves and
shipped beside it) and, for the two helpers, the export's manifest modules (idem). The server
has Python but not netroot's dependencies. The role copies the tree tool and the checker
(playbooks/roles/netroot_nfs_server/files: netroot-lib/ and netroot-nfs-check); netroot.bundle
sends the helpers, as source in the command line, at each use. tests/unit/core/test_remote.py
proves the import rule for both, and for the QPU program netroot.bundle sends to the board.
"""
