"""netroot: run a lab of Raspberry Pi boards from one container image over NFS."""

__version__ = "0.1.0"
