"""Export: a Docker image or rootfs tar becomes an immutable, verified version in the NFS tree."""
