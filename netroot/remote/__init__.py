"""Code that runs away from the control host, on the NFS server: the TFTP tree tool (tree,
switch, uboot) and the exports checker (nfs_check).

Standard library only, plus netroot.errors and netroot.fsutil (stdlib-only themselves and
shipped beside it): the server has Python but not netroot's dependencies. The role ships it
from here (playbooks/roles/netroot_nfs_server/files: netroot-lib/ for the tree tool,
netroot-nfs-check for the checker); tests/unit/core/test_remote.py proves the import rule.
The QPU program sent to the board (netroot/qpu, bundled by qpu/bundle.py) keeps the same rule.
"""
