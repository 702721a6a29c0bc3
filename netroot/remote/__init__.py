"""Code that runs away from the control host, on the NFS server: the TFTP tree tool (tree,
switch, uboot), the exports checker (nfs_check), the writer's lock (lock, which netroot also
takes on a local export root), the helpers a remote export root runs (export: verify, commit,
switch, prune; fleet: the fleet state and the lock, per control host session), and the loader
of every program sent as source (loader, on the server and on the boards).

Standard library only, plus netroot.errors and netroot.fsutil (stdlib-only themselves) and,
for the two helpers, the export's manifest modules (idem). The server has Python but not
netroot's dependencies, so each program reaches it one way: as one self-contained source made
by netroot.bundle.server_program (the loader, the modules it carries, its entry point). The
helpers are sent in the ssh command line at each use; the exports checker and the TFTP tree
tool are installed by the server role from the same text, committed as
playbooks/roles/netroot_nfs_server/files/netroot-nfs-check and netroot-tftp.
tests/unit/remote/test_programs.py proves the import rule for every program (and for the QPU
program netroot.bundle sends to the board) and that the committed files are today's.
"""
