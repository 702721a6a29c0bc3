"""Provisioning: the NFS server and the boards, through the Ansible roles in playbooks/.

Pure: plan (runner inputs as data), render (the templates, StrictUndefined, for dry runs and
early errors), events (runner events -> progress and summary), nfs_check (exports validator,
also run on the server). The entry point is `netroot.provision.service.provision()`.
"""
