"""Building and caching the lab's trees (mmdebstrap) and Docker images (no registry, ever)."""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

from netroot.errors import EnvironmentMissing
from netroot.lab.host import bytecode
from netroot.lab.recipes import Recipe
from netroot.paths import project_file
from netroot.run import run

Report = Callable[[str], None]
MMDEBSTRAP_HINT = "install mmdebstrap: apt-get install mmdebstrap qemu-user-static binfmt-support"


# mmdebstrap's own hook: dpkg runs under eatmydata while the tree is built (no fsync per
# unpacked file), and eatmydata is removed again, so the tree holds exactly the recipe's packages.
# ldconfig runs once more after it: the last ldconfig trigger saw libeatmydata, and without this
# /etc/ld.so.cache would still name it (bench/bench_lab_build.py compares the trees).
EATMYDATA_HOOKS = Path("/usr/share/mmdebstrap/hooks/eatmydata")
LDCONFIG_AGAIN = '--customize-hook=chroot "$1" /sbin/ldconfig'


def build_options(recipe: Recipe) -> tuple[str, ...]:
    """What makes mmdebstrap faster here without changing the tree (see Recipe.argv)."""
    if recipe.variant == "extract":
        return ()  # extract runs no dpkg
    options: tuple[str, ...] = ()
    if (EATMYDATA_HOOKS / "customize.sh").is_file():  # else an older mmdebstrap builds as before
        options += (f"--hook-directory={EATMYDATA_HOOKS}", LDCONFIG_AGAIN)
    if recipe.host_bytecode:
        options += host_bytecode_hooks()
    return options


def host_bytecode_hooks() -> tuple[str, ...]:
    """py3compile told to skip everything while dpkg runs under qemu-user, then the host
    compiles what it would have (netroot/lab/host/bytecode.py, run by this interpreter)."""
    bcep = f'"$1/{bytecode.BCEP_DIR}"'
    line = shlex.quote(bytecode.EXCLUDE_ALL)
    script = shlex.quote(str(Path(bytecode.__file__).resolve()))
    return (
        f"--essential-hook=mkdir -p {bcep} && echo {line} > {bcep}/{bytecode.BCEP_FILE}",
        f'--customize-hook={shlex.quote(sys.executable)} {script} "$1"',
    )


def rootfs(recipe: Recipe, cache: Path, report: Report) -> Path:
    """The recipe's tree as a tar in `cache`, built by mmdebstrap on first use."""
    path = cache / recipe.filename
    if path.exists():
        return path
    report(f"building {recipe.name} ({recipe.arch}) with mmdebstrap; a few minutes, once")
    # mmdebstrap's own temp dir must be ours (and on a disk, not a small tmpfs).
    tmpdir = cache / "tmp"
    tmpdir.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.stem + ".partial.tar")
    if partial.is_dir():
        shutil.rmtree(partial)
    partial.unlink(missing_ok=True)
    env = {**os.environ, "TMPDIR": str(tmpdir)}
    run(recipe.argv(str(partial), build_options(recipe)), env=env, hint=MMDEBSTRAP_HINT)
    partial.rename(path)
    return path


def docker_image_label(tag: str) -> str | None:
    """The image's netroot.recipe label, or None if the image is not in the local store."""
    proc = run(
        ["docker", "image", "inspect", "-f", '{{index .Config.Labels "netroot.recipe"}}', tag],
        check=False,
    )
    if proc.returncode != 0:
        return None
    return proc.stdout.decode().strip()


def docker_image(
    tag: str, recipe_dir: str, tar: Path, key: str, platform: str, report: Report
) -> None:
    """Build `tag` FROM scratch with the tar as its root, unless it is already built from `key`."""
    if shutil.which("docker") is None:
        raise EnvironmentMissing("docker: not installed", "apt-get install docker.io")
    if docker_image_label(tag) == key:
        return
    report(f"building Docker image {tag} ({platform})")
    src = project_file("images", recipe_dir)
    ctx = tar.parent / "tmp" / f"ctx-{recipe_dir}"
    shutil.rmtree(ctx, ignore_errors=True)
    shutil.copytree(src, ctx)
    os.link(tar, ctx / "rootfs.tar")  # same disk: no 200 MB copy
    try:
        run(
            [
                "docker",
                "build",
                "--pull=false",
                "--platform",
                platform,
                "-q",
                "-t",
                tag,
                "--build-arg",
                f"NETROOT_RECIPE={key}",
                str(ctx),
            ],
            hint="is dockerd running? (`bash .ci/setup` starts it)",
        )
    finally:
        shutil.rmtree(ctx, ignore_errors=True)
