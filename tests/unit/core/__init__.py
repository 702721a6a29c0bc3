"""Tests of netroot's top-level modules (netroot/*.py: console, fsutil, sshtarget, ...), of the
house's own rules (purity, metrics), and the kits the room tests share (fleetkit, named_local).
Each room of netroot/ has its own folder beside this one."""
