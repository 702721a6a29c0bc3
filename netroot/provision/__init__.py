"""Provisioning: the NFS server and the boards, through the Ansible roles in playbooks/.

Pure: plan (runner inputs as data), events (runner events -> progress and summary). The
templates are rendered by netroot/templating.py; the exports checker it runs on the server is
netroot/remote/nfs_check.py. The entry point is `netroot.provision.apply.provision()`.
"""
