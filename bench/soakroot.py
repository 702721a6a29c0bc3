"""A small filesystem of the soak's own under the lab's export root, so that the soak can fill
it (the disk-full fault) without filling the machine's shared disk (not a test; root only).

    python -m bench.soakroot up [--size 4G]   # before `netroot lab up` (Ganesha labs)
    python -m bench.soakroot down             # after `netroot lab down`

`up` makes an ext4 filesystem in a sparse file beside the lab (`<lab dir>/soak-export.img`,
no blocks reserved for root: netroot runs as root here and would otherwise still find 0 free
blocks' reserve to write into) and mounts it over the lab's export root: the Ganesha container
bind-mounts that path when `lab up` creates it, so the lab serves the small filesystem. What
the export root held before is hidden, not touched, and back after `down` (the fleet state and
versions of other labs included). A lab running at `up` is refused: its container would keep
serving the directory under the mount. The kernel server's export root is a disk of its own in
its VM already (16 GiB, sparse); it needs none of this.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from netroot import paths
from netroot.lab import state as lab_state
from netroot.lab.host.service import status

IMAGE = "soak-export.img"
LABEL = "netroot-soak"


def export_root() -> Path:
    """The export root the next `lab up` serves (the one it had, else the default)."""
    lab_dir = paths.lab_dir()
    saved = lab_state.load(lab_dir / "state.json").get("export_root")
    return Path(str(saved)) if saved else lab_dir / "export"


def mounted(root: Path) -> str:
    """The source mounted at `root` ("" when nothing is)."""
    for line in Path("/proc/self/mounts").read_text().splitlines():
        fields = line.split()
        if len(fields) > 1 and fields[1] == str(root):
            return fields[0]
    return ""


def up(size: str) -> None:
    root, image = export_root(), paths.lab_dir() / IMAGE
    if mounted(root):
        sys.exit(
            f"{root} is a mount already ({mounted(root)}): run `python -m bench.soakroot down`"
        )
    if status().anything_running:
        sys.exit("a lab is running: `netroot lab down` first (its server serves the root as is)")
    root.mkdir(parents=True, exist_ok=True)
    image.unlink(missing_ok=True)
    subprocess.run(["truncate", "-s", size, str(image)], check=True)
    subprocess.run(["mkfs.ext4", "-q", "-F", "-m", "0", "-L", LABEL, str(image)], check=True)
    subprocess.run(["mount", "-o", "loop", str(image), str(root)], check=True)
    print(f"{root}: an ext4 of {size} of the soak's own ({image})")


def down() -> None:
    root, image = export_root(), paths.lab_dir() / IMAGE
    if mounted(root):
        for _ in range(10):  # a container or a shell just leaving it
            if subprocess.run(["umount", str(root)], check=False).returncode == 0:
                break
            time.sleep(3)
        else:
            sys.exit(f"{root} is still busy: `fuser -vm {root}`, then `umount {root}`")
    image.unlink(missing_ok=True)
    print(f"{root}: the lab's own export root again")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("action", choices=("up", "down"))
    parser.add_argument("--size", default="4G", help="the filesystem's size (truncate -s)")
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench.soakroot mounts a filesystem: run it as root")
    if args.action == "up":
        up(args.size)
    else:
        down()


if __name__ == "__main__":
    main()
