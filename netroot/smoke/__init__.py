"""Smoke tests: testinfra checks in each board's version (its chroot, or its booted root), plus
the QPU smoke test. Results are returned; the fleet records them (netroot/fleet)."""
