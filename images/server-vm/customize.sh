#!/bin/sh
# Turn the server VM's tree (mmdebstrap amd64 bookworm at $1) into the lab's kernel NFS server:
# Debian with Linux's own nfs-kernel-server, systemd, sshd and a sudo user `admin` (root login
# refused), as a small Debian server a lab would run. Runs on the host against the unpacked
# tree; no chroot. Per-lab identity (SSH host key, authorized_keys, address, export root) is
# NOT here: netroot-seed.service lays the lab's seed disk over / at every boot.
set -eu
T=$1

# No baked host keys: the lab generates nfs-01's and puts it in known_hosts.
rm -f "$T"/etc/ssh/ssh_host_*
: > "$T/etc/machine-id"
rm -f "$T/var/lib/dbus/machine-id"
echo "nfs-01" > "$T/etc/hostname"
printf '127.0.0.1 localhost\n127.0.1.1 nfs-01\n' > "$T/etc/hosts"
: > "$T/etc/fstab"

mkdir -p "$T/etc/ssh/sshd_config.d"
cat > "$T/etc/ssh/sshd_config.d/10-netroot-lab.conf" <<'CONF'
# netroot lab server: no root login, keys only, one host key (from the seed).
HostKey /etc/ssh/ssh_host_ed25519_key
PermitRootLogin no
PasswordAuthentication no
KbdInteractiveAuthentication no
UseDNS no
CONF

# The sudo user, written into the tables directly (no chroot needed).
echo "admin:x:1000:1000::/home/admin:/bin/bash" >> "$T/etc/passwd"
echo "admin:*:19700:0:99999:7:::" >> "$T/etc/shadow"
echo "admin:x:1000:" >> "$T/etc/group"
echo "admin:!::" >> "$T/etc/gshadow"
sed -i -e '/^sudo:/{s/:$/:admin/;t' -e 's/$/,admin/}' "$T/etc/group"
mkdir -p "$T/home/admin"
chown 1000:1000 "$T/home/admin"
chmod 0750 "$T/home/admin"
printf 'admin ALL=(ALL) NOPASSWD: ALL\n' > "$T/etc/sudoers.d/010_admin-nopasswd"
chmod 0440 "$T/etc/sudoers.d/010_admin-nopasswd"

# The seed: a tar on a read-only virtio disk with serial `netroot-seed` (host key,
# authorized_keys, the lab address as a systemd-networkd file, the export root's path). Laid
# over / before the network, sshd and the NFS server start; then the export disk (serial
# `netroot-export`) is mounted at the export root, so nfsd never serves the root disk by mistake.
mkdir -p "$T/usr/local/sbin"
cat > "$T/usr/local/sbin/netroot-seed" <<'SCRIPT'
#!/bin/sh
set -eu
disk() { # serial -> /dev/vdX
    for d in /sys/block/vd*; do
        if [ "$(cat "$d/serial" 2>/dev/null)" = "$1" ]; then echo "/dev/${d##*/}"; return 0; fi
    done
    echo "netroot-seed: no disk with serial $1" >&2
    return 1
}
tar -x -p --numeric-owner -f "$(disk netroot-seed)" -C /
root=$(cat /etc/netroot/export-root)
mkdir -p "$root"
mountpoint -q "$root" || mount -t ext4 -o noatime "$(disk netroot-export)" "$root"
# Not traversable by local users (images carry setuid binaries); nfsd runs as root.
chmod 0700 "$root"
SCRIPT
chmod 0755 "$T/usr/local/sbin/netroot-seed"
cat > "$T/etc/systemd/system/netroot-seed.service" <<'CONF'
[Unit]
Description=netroot lab: the seed disk and the export disk
DefaultDependencies=no
After=local-fs.target systemd-remount-fs.service
Before=sysinit.target network-pre.target
Wants=network-pre.target

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/local/sbin/netroot-seed

[Install]
WantedBy=sysinit.target
CONF
mkdir -p "$T/etc/systemd/system/sysinit.target.wants" "$T/etc/systemd/system/multi-user.target.wants"
ln -sf /etc/systemd/system/netroot-seed.service \
    "$T/etc/systemd/system/sysinit.target.wants/netroot-seed.service"
# The NFS server waits for the export disk: it must never start serving an empty mount point.
mkdir -p "$T/etc/systemd/system/nfs-server.service.d"
printf '[Unit]\nAfter=netroot-seed.service\nRequires=netroot-seed.service\n' \
    > "$T/etc/systemd/system/nfs-server.service.d/10-netroot-lab.conf"

# The address comes from the seed's .network file (systemd-networkd, matched by MAC).
ln -sf /lib/systemd/system/systemd-networkd.service \
    "$T/etc/systemd/system/multi-user.target.wants/systemd-networkd.service"

# Units that only cost boot time under emulation, or wait for a network that never routes out.
for unit in systemd-networkd-wait-online.service apt-daily.timer apt-daily-upgrade.timer \
    e2scrub_all.timer e2scrub_reap.service fstrim.timer dpkg-db-backup.timer \
    getty@tty1.service systemd-pstore.service systemd-binfmt.service \
    proc-sys-fs-binfmt_misc.automount systemd-firstboot.service; do
    ln -sf /dev/null "$T/etc/systemd/system/$unit"
done
ln -sf /lib/systemd/system/multi-user.target "$T/etc/systemd/system/default.target"

mkdir -p "$T/etc/systemd/journald.conf.d"
printf '[Journal]\nStorage=volatile\nRuntimeMaxUse=16M\n' \
    > "$T/etc/systemd/journald.conf.d/10-netroot-lab.conf"
