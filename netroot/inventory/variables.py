"""Every `netroot_*` name netroot, its playbooks and its templates read: one declared table.

The inventory reference (docs/) is built from VARIABLES, the loader warns about a `netroot_*`
variable that is not in it (a misspelt `netroot_imgae` would otherwise be silently ignored),
and tests/unit/inventory/test_variables.py greps netroot/, playbooks/ and templates/ and fails
when a name read there is in neither VARIABLES nor NOT_VARIABLES.

Scopes:
- host: any host of the inventory.
- board: a host of group `boards`.
- server: a host of group `nfs_servers`.
- board-role / server-role: a knob of roles/netroot_board or roles/netroot_nfs_server, with
  its default in the role's defaults/main.yml; an inventory value overrides it (advanced).
- internal: set by netroot (extra vars) or by the roles at run time (vars/main.yml, set_fact,
  register); a value in the inventory is overridden, so the loader warns about it too.
"""

from __future__ import annotations

from dataclasses import dataclass

SCOPES = ("host", "board", "server", "board-role", "server-role", "internal")
INVENTORY_SCOPES = SCOPES[:5]


@dataclass(frozen=True)
class Variable:
    name: str
    scope: str  # one of SCOPES
    default: str  # as the reference shows it; "-" for none
    meaning: str


# name | scope | default ("-": none) | meaning; an indented line continues the meaning.
TABLE = """
# any host
netroot_known_hosts | host | UserKnownHostsFile of ansible_ssh_common_args, else ~/.ssh | The
    known_hosts file that vouches for this host's key (never accepted on first use).
# boards (group boards)
netroot_image | board | raspbian | The exported image this board runs.
netroot_version | board | - | A pinned version id (hex) of its image; unset: the image's current
    version, or the one a rollout assigned.
netroot_address | board | ansible_host | The address the NFS server sees this board at (its
    exports are limited to it); an IP address.
netroot_nfs_server | board | the only host of nfs_servers | The nfs_servers host this board
    mounts or boots from; required with several servers.
netroot_boot | board | sd | sd: boots its own card, mounts its version over NFS; netboot: no
    card, root on NFS (needs netroot_mac and netroot_serial).
netroot_mac | board | - | Its Ethernet MAC, like b8:27:eb:12:34:56 (netboot: dnsmasq answers by
    it).
netroot_serial | board | - | The last 8 hex digits of Serial in /proc/cpuinfo, quoted (netboot:
    the name of its TFTP directory).
netroot_qpu | board | false | A VideoCore IV QPU is expected (Pi 3B): smoke checks it.
netroot_qpu_boot_config | board | netroot_qpu | Write the QPU's config.txt block (KMS overlays
    off, gpu_mem); a change reboots the board.
netroot_gpu_mem | board | 128 | gpu_mem in MiB written to config.txt (32..944).
netroot_power_cycle_cmd | board | - | A command run on the control host that power-cycles this
    board when a netboot reboot hangs.
netroot_cmdline_console | board | console=serial0,115200 console=tty1 | The console= arguments
    of a netboot board's kernel command line.
netroot_machine_id | board | derived from the host name | A netboot board's systemd machine-id
    (32 hex digits).
# NFS servers (group nfs_servers)
netroot_export_root | server | /srv/netroot | Where exports live: <image>/versions/<id>; an
    absolute path.
netroot_nfs_backend | server | kernel | kernel (nfs-kernel-server) or ganesha.
netroot_nfs_address | server | ansible_host | The address boards mount from; an IP.
netroot_tftp_root | server | /srv/netroot-tftp | Netboot boards' boot files (dnsmasq's
    tftp-root); an absolute path.
netroot_export_remote | server | false | true: netroot_export_root is a path on the server,
    reached over SSH; false: a path on the control host.
netroot_fleet_home | server | false | This server holds the fleet state and the writer's lock
    (at most one; default: the only or first server).
netroot_server_reboot_batch | server | 10 | At most this many of its boards reboot or switch at
    once.
netroot_nfs_export_ids | server | {} | Image name -> fixed ganesha Export_Id, when the derived
    one must be overridden.
netroot_nfs_threads | server | one per board served, 16 to 128 | nfsd threads of a kernel
    server (ganesha keeps its own 256 workers).
netroot_dnsmasq_interface | server | - | The interface facing netboot boards (required when a
    board netboots).
netroot_dnsmasq_network | server | - | Netboot boards' subnet, like 10.88.0.0/24 (required when a
    board netboots).
netroot_dnsmasq_reply_delay | server | 1 | Seconds (0-60) dnsmasq waits before answering a boot
    ROM.
netroot_dnsmasq_rom_workarounds | server | true | The Pi 3B boot ROM's workarounds (trailing
    spaces, reply delay).
netroot_dnsmasq_addresses | server | false | dnsmasq gives each board its inventory address (no
    other DHCP server serves them, as in the virtual lab).
# roles/netroot_board knobs (its defaults/main.yml)
netroot_board_version_overrides | board-role | netroot_version_overrides | Board -> version it
    runs (netroot decides it; see netroot_version).
netroot_board_nfs_version | board-role | 4.1 | NFS version of the board's mount ("3" adds
    nolock).
netroot_board_nfs_options | board-role | - | Replaces the whole NFS mount option string.
netroot_board_nfs_version_profile | board-role | nocto,actimeo=86400,lookupcache=all | Options
    added to a version's own mount (immutable: attributes and lookups cached, no close-to-open);
    "" turns them off.
netroot_board_nfs_extra_options | board-role | - | Appended to the NFS mount options.
netroot_board_layer | board-role | disk | The writable layer over the version: disk or tmpfs.
netroot_board_mount_retries | board-role | 10 | Boot-time mount tries.
netroot_board_mount_retry_delay | board-role | 3 | Seconds between mount tries.
netroot_board_mount_attempt_timeout | board-role | 60 | Seconds per mount try (all end 15 s
    before netroot_board_mount_timeout).
netroot_board_mount_timeout | board-role | 300 | The mount unit's start timeout, seconds.
netroot_board_stop_timeout | board-role | 10 | Seconds the chroot's processes get after SIGTERM
    on a switch or unmount.
netroot_board_set_hostname | board-role | true | Set /etc/hostname to the inventory name.
netroot_board_install_packages | board-role | true | apt-get nfs-common when mount.nfs is
    missing.
netroot_board_qpu_boot_config | board-role | netroot_qpu_boot_config | See
    netroot_qpu_boot_config.
netroot_board_gpu_mem | board-role | netroot_gpu_mem | See netroot_gpu_mem.
netroot_board_reboot_timeout | board-role | 600 | Seconds a rebooting board has to come back
    with its version mounted.
netroot_board_reboot_connect_timeout | board-role | 10 | Seconds each is-it-back probe may wait
    to connect.
netroot_board_reboot_probe_interval | board-role | 2 | Seconds between is-it-back probes.
netroot_board_boot_dirs | board-role | [/boot/firmware, /boot] | Where the boot partition is
    looked for, first match wins.
netroot_board_reboot_pending_file | board-role | /run/netroot/reboot-pending | Marks a
    config.txt written but not yet read by the firmware.
netroot_board_prepare_only | board-role | false | Boot config, scripts and unit only, no version
    (a rollout's first step).
netroot_board_boot | board-role | netroot_boot | See netroot_boot.
netroot_board_cmdline_file | board-role | /proc/cmdline | Where a netboot board's booted version
    is read (nfsroot=).
netroot_board_reboot_command | board-role | /bin/systemctl reboot | How a board is rebooted (an
    absolute path).
netroot_board_boot_id_command | board-role | cat /proc/sys/kernel/random/boot_id | How a reboot
    is recognised.
netroot_board_nfsroot_pattern | board-role | nfsroot=.../versions/(<id>) | The regex that reads
    the booted version from the command line.
# roles/netroot_nfs_server knobs (its defaults/main.yml)
netroot_nfs_server_backend | server-role | netroot_nfs_backend | See netroot_nfs_backend.
netroot_nfs_server_export_root | server-role | netroot_export_root | See netroot_export_root.
netroot_nfs_server_export_ids | server-role | netroot_nfs_export_ids | See
    netroot_nfs_export_ids.
netroot_nfs_server_install_packages | server-role | true | apt-get the backend's package when it
    is missing.
netroot_nfs_server_manage_service | server-role | true | Start the server and apply changes
    (exportfs -ra / restart).
netroot_nfs_server_exports_file | server-role | /etc/exports | The kernel server's exports.
netroot_nfs_server_threads | server-role | netroot_nfs_threads | See netroot_nfs_threads.
netroot_nfs_server_nfsd_conf | server-role | /etc/nfs.conf.d/netroot.conf | Where a kernel
    server's [nfsd] threads are written.
netroot_nfs_server_ganesha_conf | server-role | /etc/ganesha/ganesha.conf | ganesha's
    configuration.
netroot_nfs_server_ganesha_pidfile | server-role | /run/netroot-ganesha.pid | ganesha's PID file
    (script mode).
netroot_nfs_server_ganesha_log | server-role | /var/log/ganesha/netroot-ganesha.log | ganesha's
    log.
netroot_nfs_server_ganesha_service | server-role | auto | How ganesha runs: script, systemd or
    auto.
netroot_nfs_server_bin_dir | server-role | /usr/local/sbin | Where netroot's server scripts are
    installed.
netroot_nfs_server_tftp_root | server-role | netroot_tftp_root | See netroot_tftp_root.
netroot_nfs_server_dnsmasq_interface | server-role | netroot_dnsmasq_interface | See
    netroot_dnsmasq_interface.
netroot_nfs_server_dnsmasq_network | server-role | netroot_dnsmasq_network | See
    netroot_dnsmasq_network.
netroot_nfs_server_dnsmasq_reply_delay | server-role | netroot_dnsmasq_reply_delay | See
    netroot_dnsmasq_reply_delay.
netroot_nfs_server_dnsmasq_rom_workarounds | server-role | netroot_dnsmasq_rom_workarounds | See
    netroot_dnsmasq_rom_workarounds.
netroot_nfs_server_dnsmasq_addresses | server-role | netroot_dnsmasq_addresses | See
    netroot_dnsmasq_addresses.
netroot_nfs_server_dnsmasq_conf | server-role | /etc/netroot/dnsmasq.conf | dnsmasq's
    configuration.
netroot_nfs_server_dnsmasq_pidfile | server-role | /run/netroot-dnsmasq.pid | dnsmasq's PID
    file.
netroot_nfs_server_dnsmasq_log | server-role | /var/log/netroot-dnsmasq.log | dnsmasq's log
    (DHCP and TFTP): where `status` finds a diskless board's boot stage.
netroot_nfs_server_dnsmasq_log_max | server-role | 8M | logrotate's size for that log (one old
    part kept), where /etc/logrotate.d exists.
netroot_nfs_server_dnsmasq_user | server-role | dnsmasq | The user dnsmasq runs as.
netroot_nfs_server_lib_dir | server-role | /usr/local/lib/netroot | Where netroot-tftp is
    installed.
netroot_nfs_server_state_file | server-role | /var/lib/netroot/nfs-server.state | The stamp of
    the last successful configuration (delete it to force one).
# set by netroot or by the roles while a play runs
netroot_version_overrides | internal | - | extra var: board -> version, decided by netroot
netroot_board_server | internal | - | roles/netroot_board/vars: the board's server
netroot_board_version | internal | - | roles/netroot_board/vars: the version it should run
netroot_board_available | internal | - | roles/netroot_board/vars: the versions its server has
netroot_board_tftp_request | internal | - | roles/netroot_board: set_fact
netroot_board_booted_version | internal | - | roles/netroot_board: set_fact
netroot_board_hung | internal | - | roles/netroot_board: set_fact
netroot_board_mounted_version | internal | - | roles/netroot_board: set_fact
netroot_nfs_server_threads_written | internal | - | roles/netroot_nfs_server: register
netroot_board_defer_mount | internal | - | roles/netroot_board: set_fact
netroot_board_tftp | internal | - | roles/netroot_board: register
netroot_board_booted | internal | - | roles/netroot_board: register
netroot_board_rebooted | internal | - | roles/netroot_board: register
netroot_board_power_cycled | internal | - | roles/netroot_board: register
netroot_board_booted_now | internal | - | roles/netroot_board: register
netroot_board_back | internal | - | roles/netroot_board: register
netroot_board_boot_config | internal | - | roles/netroot_board: register
netroot_board_apply | internal | - | roles/netroot_board: register
netroot_nfs_server_inputs_digest | internal | - | roles/netroot_nfs_server/vars
netroot_nfs_server_state | internal | - | roles/netroot_nfs_server: set_fact
netroot_nfs_server_exported | internal | - | roles/netroot_nfs_server: set_fact
netroot_nfs_server_netboot | internal | - | roles/netroot_nfs_server: set_fact
netroot_nfs_server_ganesha_runner | internal | - | roles/netroot_nfs_server: set_fact
netroot_nfs_server_state_write | internal | - | roles/netroot_nfs_server: set_fact
netroot_nfs_server_exports | internal | - | roles/netroot_nfs_server: set_fact
netroot_nfs_server_dnsmasq_boards | internal | - | roles/netroot_nfs_server: set_fact
netroot_nfs_server_state_read | internal | - | roles/netroot_nfs_server: register
netroot_nfs_server_ganesha_bin | internal | - | roles/netroot_nfs_server: register
netroot_nfs_server_systemd | internal | - | roles/netroot_nfs_server: register
netroot_nfs_server_ganesha_start | internal | - | roles/netroot_nfs_server: register
netroot_nfs_server_dnsmasq_bin | internal | - | roles/netroot_nfs_server: register
netroot_nfs_server_dnsmasq_start | internal | - | roles/netroot_nfs_server: register
netroot_nfs_server_logrotate_dir | internal | - | roles/netroot_nfs_server: register
netroot_nfs_server_exportfs | internal | - | roles/netroot_nfs_server: register
netroot_nfs_server_exports_written | internal | - | roles/netroot_nfs_server: register
netroot_nfs_server_reexport | internal | - | roles/netroot_nfs_server: register
"""


def _rows(table: str) -> tuple[Variable, ...]:
    rows: list[list[str]] = []
    for line in table.strip().splitlines():
        if line.startswith("#"):
            continue
        if line.startswith(" "):
            rows[-1][3] += " " + line.strip()
            continue
        name, scope, default, meaning = (part.strip() for part in line.split(" | ", 3))
        rows.append([name, scope, default, meaning])
    return tuple(Variable(*row) for row in rows)


VARIABLES: tuple[Variable, ...] = _rows(TABLE)

# `netroot_*` words in the code that are no variable at all.
NOT_VARIABLES: dict[str, str] = {
    "netroot_board": "the board role's name",
    "netroot_reboot": "the board role's action plugin (action_plugins/netroot_reboot.py)",
    "netroot_chroot_installed": "a smoke check's name",
    **{
        name: "a Prometheus metric (netroot/fleet/metrics.py)"
        for name in (
            "netroot_board_up",
            "netroot_board_version_info",
            "netroot_board_in_line",
            "netroot_board_last_smoke_ok",
            "netroot_board_last_smoke_timestamp_seconds",
            "netroot_rollout_boards",
            "netroot_rollout_info",
            "netroot_rollout_started_timestamp_seconds",
        )
    },
}

BY_NAME: dict[str, Variable] = {v.name: v for v in VARIABLES}
