"""What the virtual lab does on this machine: its QEMU machines, their network, disks, images,
keys and server, and `lab up`/`down` itself. The lab's plans, recipes, renderers and state file
stay in netroot.lab, free of side effects (tests/unit/core/test_purity.py checks them)."""
