"""Smoke tests, as a list of stages (stages.py): testinfra checks in each board's version (its
chroot, or its booted root), then the QPU program with its torch stages (qpu.py). Results are
returned; the fleet records them (netroot/fleet)."""
