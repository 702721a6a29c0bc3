"""Smoke tests: testinfra checks inside each board's chroot, plus the QPU smoke test."""
