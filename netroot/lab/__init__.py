"""The virtual lab: a real NFS server and ARM boards under QEMU on one machine."""
