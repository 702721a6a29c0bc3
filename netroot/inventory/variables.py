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
INVENTORY_SCOPES = ("host", "board", "server", "board-role", "server-role")


@dataclass(frozen=True)
class Variable:
    name: str
    scope: str  # one of SCOPES
    default: str  # as the reference shows it; "" when unset means "none"
    meaning: str


def _v(name: str, scope: str, default: str, meaning: str) -> Variable:
    return Variable(name, scope, default, meaning)


_B, _S, _H, _BR, _SR, _I = SCOPES[1], SCOPES[2], SCOPES[0], SCOPES[3], SCOPES[4], SCOPES[5]

VARIABLES: tuple[Variable, ...] = (
    # -- any host
    _v(
        "netroot_known_hosts",
        _H,
        "UserKnownHostsFile of ansible_ssh_common_args, else ~/.ssh",
        "The known_hosts file that vouches for this host's key (never accepted on first use).",
    ),
    # -- boards
    _v("netroot_image", _B, "raspbian", "The exported image this board runs."),
    _v(
        "netroot_version",
        _B,
        "",
        "A pinned version id (hex) of its image; unset: the image's "
        "current version, or the one a rollout assigned.",
    ),
    _v(
        "netroot_address",
        _B,
        "ansible_host",
        "The address the NFS server sees this board at "
        "(its exports are limited to it); an IP address.",
    ),
    _v(
        "netroot_nfs_server",
        _B,
        "the only host of nfs_servers",
        "The nfs_servers host this board mounts or boots from; required with several servers.",
    ),
    _v(
        "netroot_boot",
        _B,
        "sd",
        "sd: boots its own card, mounts its version over NFS; "
        "netboot: no card, root on NFS (needs netroot_mac and netroot_serial).",
    ),
    _v(
        "netroot_mac",
        _B,
        "",
        "Its Ethernet MAC, like b8:27:eb:12:34:56 (netboot: dnsmasq answers by it).",
    ),
    _v(
        "netroot_serial",
        _B,
        "",
        "The last 8 hex digits of Serial in /proc/cpuinfo, quoted "
        "(netboot: the name of its TFTP directory).",
    ),
    _v("netroot_qpu", _B, "false", "A VideoCore IV QPU is expected (Pi 3B): smoke checks it."),
    _v(
        "netroot_qpu_boot_config",
        _B,
        "netroot_qpu",
        "Write the QPU's config.txt block (KMS overlays off, gpu_mem); a change reboots the board.",
    ),
    _v("netroot_gpu_mem", _B, "128", "gpu_mem in MiB written to config.txt (32..944)."),
    _v(
        "netroot_power_cycle_cmd",
        _B,
        "",
        "A command run on the control host that power-cycles "
        "this board when a netboot reboot hangs.",
    ),
    _v(
        "netroot_cmdline_console",
        _B,
        "console=serial0,115200 console=tty1",
        "The console= arguments of a netboot board's kernel command line.",
    ),
    _v(
        "netroot_machine_id",
        _B,
        "derived from the host name",
        "A netboot board's systemd machine-id (32 hex digits).",
    ),
    # -- NFS servers
    _v(
        "netroot_export_root",
        _S,
        "/srv/netroot",
        "Where exports live: <image>/versions/<id>; an absolute path.",
    ),
    _v("netroot_nfs_backend", _S, "kernel", "kernel (nfs-kernel-server) or ganesha."),
    _v("netroot_nfs_address", _S, "ansible_host", "The address boards mount from; an IP."),
    _v(
        "netroot_tftp_root",
        _S,
        "/srv/netroot-tftp",
        "Netboot boards' boot files (dnsmasq's tftp-root); an absolute path.",
    ),
    _v(
        "netroot_export_remote",
        _S,
        "false",
        "true: netroot_export_root is a path on the "
        "server, reached over SSH; false: a path on the control host.",
    ),
    _v(
        "netroot_fleet_home",
        _S,
        "false",
        "This server holds the fleet state and the writer's "
        "lock (at most one; default: the only or first server).",
    ),
    _v(
        "netroot_server_reboot_batch",
        _S,
        "10",
        "At most this many of its boards reboot or switch at once.",
    ),
    _v(
        "netroot_nfs_export_ids",
        _S,
        "{}",
        "Image name -> fixed ganesha Export_Id, when the derived one must be overridden.",
    ),
    _v(
        "netroot_dnsmasq_interface",
        _S,
        "",
        "The interface facing netboot boards (required when a board netboots).",
    ),
    _v(
        "netroot_dnsmasq_network",
        _S,
        "",
        "Netboot boards' subnet, like 10.88.0.0/24 (required when a board netboots).",
    ),
    _v(
        "netroot_dnsmasq_reply_delay",
        _S,
        "1",
        "Seconds (0-60) dnsmasq waits before answering a boot ROM.",
    ),
    _v(
        "netroot_dnsmasq_rom_workarounds",
        _S,
        "true",
        "The Pi 3B boot ROM's workarounds (trailing spaces, reply delay).",
    ),
    _v(
        "netroot_dnsmasq_addresses",
        _S,
        "false",
        "dnsmasq gives each board its inventory "
        "address (no other DHCP server serves them, as in the virtual lab).",
    ),
    # -- roles/netroot_board knobs (defaults/main.yml)
    _v(
        "netroot_board_version_overrides",
        _BR,
        "netroot_version_overrides",
        "Board -> version it runs (netroot decides it; see netroot_version).",
    ),
    _v(
        "netroot_board_nfs_version",
        _BR,
        "4.1",
        'NFS version of the board\'s mount ("3" adds nolock).',
    ),
    _v("netroot_board_nfs_options", _BR, "", "Replaces the whole NFS mount option string."),
    _v("netroot_board_nfs_extra_options", _BR, "", "Appended to the NFS mount options."),
    _v("netroot_board_layer", _BR, "disk", "The writable layer over the version: disk or tmpfs."),
    _v("netroot_board_mount_retries", _BR, "10", "Boot-time mount tries."),
    _v("netroot_board_mount_retry_delay", _BR, "3", "Seconds between mount tries."),
    _v("netroot_board_mount_attempt_timeout", _BR, "20", "Seconds per mount try."),
    _v("netroot_board_mount_timeout", _BR, "300", "The mount unit's start timeout, seconds."),
    _v(
        "netroot_board_stop_timeout",
        _BR,
        "10",
        "Seconds the chroot's processes get after SIGTERM on a switch or unmount.",
    ),
    _v("netroot_board_set_hostname", _BR, "true", "Set /etc/hostname to the inventory name."),
    _v(
        "netroot_board_install_packages",
        _BR,
        "true",
        "apt-get nfs-common when mount.nfs is missing.",
    ),
    _v(
        "netroot_board_qpu_boot_config",
        _BR,
        "netroot_qpu_boot_config",
        "See netroot_qpu_boot_config.",
    ),
    _v("netroot_board_gpu_mem", _BR, "netroot_gpu_mem", "See netroot_gpu_mem."),
    _v(
        "netroot_board_reboot_timeout",
        _BR,
        "600",
        "Seconds a rebooting board has to come back with its version mounted.",
    ),
    _v(
        "netroot_board_reboot_connect_timeout",
        _BR,
        "10",
        "Seconds each is-it-back probe may wait to connect.",
    ),
    _v("netroot_board_reboot_probe_interval", _BR, "2", "Seconds between is-it-back probes."),
    _v(
        "netroot_board_boot_dirs",
        _BR,
        "[/boot/firmware, /boot]",
        "Where the boot partition is looked for, first match wins.",
    ),
    _v(
        "netroot_board_reboot_pending_file",
        _BR,
        "/run/netroot/reboot-pending",
        "Marks a config.txt written but not yet read by the firmware.",
    ),
    _v(
        "netroot_board_prepare_only",
        _BR,
        "false",
        "Boot config, scripts and unit only, no version (a rollout's first step).",
    ),
    _v("netroot_board_boot", _BR, "netroot_boot", "See netroot_boot."),
    _v(
        "netroot_board_cmdline_file",
        _BR,
        "/proc/cmdline",
        "Where a netboot board's booted version is read (nfsroot=).",
    ),
    _v(
        "netroot_board_reboot_command",
        _BR,
        "/bin/systemctl reboot",
        "How a board is rebooted (an absolute path).",
    ),
    _v(
        "netroot_board_boot_id_command",
        _BR,
        "cat /proc/sys/kernel/random/boot_id",
        "How a reboot is recognised.",
    ),
    _v(
        "netroot_board_nfsroot_pattern",
        _BR,
        "nfsroot=.../versions/(<id>)",
        "The regex that reads the booted version from the command line.",
    ),
    # -- roles/netroot_nfs_server knobs (defaults/main.yml)
    _v("netroot_nfs_server_backend", _SR, "netroot_nfs_backend", "See netroot_nfs_backend."),
    _v("netroot_nfs_server_export_root", _SR, "netroot_export_root", "See netroot_export_root."),
    _v(
        "netroot_nfs_server_export_ids",
        _SR,
        "netroot_nfs_export_ids",
        "See netroot_nfs_export_ids.",
    ),
    _v(
        "netroot_nfs_server_install_packages",
        _SR,
        "true",
        "apt-get the backend's package when it is missing.",
    ),
    _v(
        "netroot_nfs_server_manage_service",
        _SR,
        "true",
        "Start the server and apply changes (exportfs -ra / restart).",
    ),
    _v("netroot_nfs_server_exports_file", _SR, "/etc/exports", "The kernel server's exports."),
    _v(
        "netroot_nfs_server_ganesha_conf",
        _SR,
        "/etc/ganesha/ganesha.conf",
        "ganesha's configuration.",
    ),
    _v(
        "netroot_nfs_server_ganesha_pidfile",
        _SR,
        "/run/netroot-ganesha.pid",
        "ganesha's PID file (script mode).",
    ),
    _v(
        "netroot_nfs_server_ganesha_log",
        _SR,
        "/var/log/ganesha/netroot-ganesha.log",
        "ganesha's log.",
    ),
    _v(
        "netroot_nfs_server_ganesha_service",
        _SR,
        "auto",
        "How ganesha runs: script, systemd or auto.",
    ),
    _v(
        "netroot_nfs_server_bin_dir",
        _SR,
        "/usr/local/sbin",
        "Where netroot's server scripts are installed.",
    ),
    _v("netroot_nfs_server_tftp_root", _SR, "netroot_tftp_root", "See netroot_tftp_root."),
    _v(
        "netroot_nfs_server_dnsmasq_interface",
        _SR,
        "netroot_dnsmasq_interface",
        "See netroot_dnsmasq_interface.",
    ),
    _v(
        "netroot_nfs_server_dnsmasq_network",
        _SR,
        "netroot_dnsmasq_network",
        "See netroot_dnsmasq_network.",
    ),
    _v(
        "netroot_nfs_server_dnsmasq_reply_delay",
        _SR,
        "netroot_dnsmasq_reply_delay",
        "See netroot_dnsmasq_reply_delay.",
    ),
    _v(
        "netroot_nfs_server_dnsmasq_rom_workarounds",
        _SR,
        "netroot_dnsmasq_rom_workarounds",
        "See netroot_dnsmasq_rom_workarounds.",
    ),
    _v(
        "netroot_nfs_server_dnsmasq_addresses",
        _SR,
        "netroot_dnsmasq_addresses",
        "See netroot_dnsmasq_addresses.",
    ),
    _v(
        "netroot_nfs_server_dnsmasq_conf",
        _SR,
        "/etc/netroot/dnsmasq.conf",
        "dnsmasq's configuration.",
    ),
    _v(
        "netroot_nfs_server_dnsmasq_pidfile", _SR, "/run/netroot-dnsmasq.pid", "dnsmasq's PID file."
    ),
    _v("netroot_nfs_server_dnsmasq_log", _SR, "/var/log/netroot-dnsmasq.log", "dnsmasq's log."),
    _v("netroot_nfs_server_dnsmasq_user", _SR, "dnsmasq", "The user dnsmasq runs as."),
    _v(
        "netroot_nfs_server_lib_dir",
        _SR,
        "/usr/local/lib/netroot",
        "Where netroot-tftp is installed.",
    ),
    _v(
        "netroot_nfs_server_state_file",
        _SR,
        "/var/lib/netroot/nfs-server.state",
        "The stamp of the last successful configuration (delete it to force one).",
    ),
)

# Set by netroot or by the roles while a play runs: never an inventory variable.
_INTERNAL = {
    "netroot_version_overrides": "extra var: board -> version, decided by netroot",
    "netroot_board_server": "roles/netroot_board/vars: the board's server",
    "netroot_board_version": "roles/netroot_board/vars: the version it should run",
    "netroot_board_available": "roles/netroot_board/vars: the versions its server has",
    "netroot_board_tftp_request": "roles/netroot_board: set_fact",
    "netroot_board_booted_version": "roles/netroot_board: set_fact",
    "netroot_board_hung": "roles/netroot_board: set_fact",
    "netroot_board_mounted_version": "roles/netroot_board: set_fact",
    "netroot_board_defer_mount": "roles/netroot_board: set_fact",
    "netroot_board_tftp": "roles/netroot_board: register",
    "netroot_board_booted": "roles/netroot_board: register",
    "netroot_board_rebooted": "roles/netroot_board: register",
    "netroot_board_power_cycled": "roles/netroot_board: register",
    "netroot_board_booted_now": "roles/netroot_board: register",
    "netroot_board_back": "roles/netroot_board: register",
    "netroot_board_boot_config": "roles/netroot_board: register",
    "netroot_board_apply": "roles/netroot_board: register",
    "netroot_nfs_server_inputs_digest": "roles/netroot_nfs_server/vars",
    "netroot_nfs_server_state": "roles/netroot_nfs_server: set_fact",
    "netroot_nfs_server_exported": "roles/netroot_nfs_server: set_fact",
    "netroot_nfs_server_netboot": "roles/netroot_nfs_server: set_fact",
    "netroot_nfs_server_ganesha_runner": "roles/netroot_nfs_server: set_fact",
    "netroot_nfs_server_state_write": "roles/netroot_nfs_server: set_fact",
    "netroot_nfs_server_exports": "roles/netroot_nfs_server: set_fact",
    "netroot_nfs_server_dnsmasq_boards": "roles/netroot_nfs_server: set_fact",
    "netroot_nfs_server_state_read": "roles/netroot_nfs_server: register",
    "netroot_nfs_server_ganesha_bin": "roles/netroot_nfs_server: register",
    "netroot_nfs_server_systemd": "roles/netroot_nfs_server: register",
    "netroot_nfs_server_ganesha_start": "roles/netroot_nfs_server: register",
    "netroot_nfs_server_dnsmasq_bin": "roles/netroot_nfs_server: register",
    "netroot_nfs_server_dnsmasq_start": "roles/netroot_nfs_server: register",
    "netroot_nfs_server_exportfs": "roles/netroot_nfs_server: register",
    "netroot_nfs_server_exports_written": "roles/netroot_nfs_server: register",
    "netroot_nfs_server_reexport": "roles/netroot_nfs_server: register",
}
VARIABLES += tuple(_v(n, _I, "", m) for n, m in _INTERNAL.items())

# `netroot_*` words in the code that are no variable at all.
NOT_VARIABLES: dict[str, str] = {
    "netroot_board": "the board role's name",
    "netroot_reboot": "the board role's action plugin (action_plugins/netroot_reboot.py)",
    "netroot_chroot_installed": "a smoke check's name",
}

BY_NAME: dict[str, Variable] = {v.name: v for v in VARIABLES}


def known(name: str) -> Variable | None:
    return BY_NAME.get(name)
