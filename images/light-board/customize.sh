#!/bin/sh
# What a light board changes of the emulated boards' card (images/board/customize.sh ran first):
# no serial console, no address from an initramfs (the lab gives the container its eth0), and
# the userspace NFS client as mount(8)'s helper for type nfs.
set -eu
T=$1
rm -f "$T/etc/systemd/system/multi-user.target.wants/netroot-console.service"
ln -sf /dev/null "$T/etc/systemd/system/netroot-console.service"
# Nothing of a container's host to manage: no console gettys, no clock, no resolver daemon.
for unit in console-getty.service getty@tty1.service systemd-resolved.service \
    systemd-remount-fs.service; do
    ln -sf /dev/null "$T/etc/systemd/system/$unit"
done
# Docker binds its own /etc/hostname, /etc/hosts and /etc/resolv.conf over the board's: files
# that cannot be replaced (netroot writes them with a rename), naming the container, not the
# board. First thing at boot they go, the seed's own files show again, and the hostname is its.
# It also writes this boot's id (/run is new at every start of the container): the kernel's
# boot_id is the host's, so a reboot is told by this one (netroot_board_boot_id_command).
cat > "$T/etc/systemd/system/netroot-light-etc.service" <<'CONF'
[Unit]
Description=netroot light board: the board's own /etc/hostname, hosts and resolv.conf
DefaultDependencies=no
Before=sysinit.target

[Service]
Type=oneshot
ExecStart=-/bin/umount /etc/hostname /etc/hosts /etc/resolv.conf
ExecStart=/bin/hostname -F /etc/hostname
ExecStart=/bin/sh -c 'cat /proc/sys/kernel/random/uuid > /run/netroot-boot-id'

[Install]
WantedBy=sysinit.target
CONF
mkdir -p "$T/etc/systemd/system/sysinit.target.wants"
ln -sf /etc/systemd/system/netroot-light-etc.service \
    "$T/etc/systemd/system/sysinit.target.wants/netroot-light-etc.service"
install -m 0755 /tmp/netroot/mount.nfs "$T/sbin/mount.nfs"
# nfs-rs from its wheel (a zip: no pip in the image, no network at build time).
SITE="$T/usr/local/lib/python3.11/dist-packages"
mkdir -p "$SITE"
for wheel in /tmp/netroot/wheels/*.whl; do python3 -m zipfile -e "$wheel" "$SITE"; done
python3 -c "import nfs_rs, pyfuse3, trio" # the helper's imports, checked at build time
# The board's boot partition stays what images/board/customize.sh wrote (stock config.txt and
# cmdline.txt): netroot manages it as on a card; this board never reads it.
