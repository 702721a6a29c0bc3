"""An image read straight from its overlay2 layer directories (the fast re-export path).

`docker export` streams the whole merged filesystem even when one small layer changed. When
the engine's layer directories are readable (root, local engine, overlay2), the merged view is
computed here with overlayfs' own rules — topmost layer wins, a 0:0 character device is a
whiteout, `trusted.overlay.opaque=y` hides lower layers — so that:

* every regular file is labelled with the layer it comes from (its origin, recorded in the
  manifest), and
* a re-export links a file from the previous version when both take it from the same layer
  (same diff id = same bytes and metadata) instead of reading it at all.

What `docker export` does to metadata is reproduced: mtimes in whole seconds, only the
`security.capability` xattr, sockets left out, hard links grouped by inode within a layer.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace

from netroot.export.members import Kind, Member, kind_of_mode
from netroot.export.writer import Writer

OPAQUE = ("trusted.overlay.opaque", "user.overlay.opaque")
KEPT_XATTRS = ("security.capability",)  # all that docker's tar writer carries


@dataclass(frozen=True)
class Visible:
    """One path of the merged view and the layer (index, top first) that provides it."""

    path: str
    layer: int
    full: str
    st: os.stat_result


def _is_whiteout(st: os.stat_result) -> bool:
    return stat.S_ISCHR(st.st_mode) and st.st_rdev == 0


def _is_opaque(full: str) -> bool:
    for name in OPAQUE:
        try:
            if os.getxattr(full, name, follow_symlinks=False) == b"y":
                return True
        except OSError:
            continue
    return False


def merged(dirs: Sequence[str]) -> Iterator[Visible]:
    """The merged view of layer dirs (top first), parents before children.

    Depth first with an explicit stack (no recursion: an image may be thousands deep)."""
    # Each item: a path to yield, and the layer dirs to list below it (empty: a leaf).
    stack: list[tuple[Visible | None, list[tuple[int, str]]]] = [(None, list(enumerate(dirs)))]
    while stack:
        visible, layers = stack.pop()
        if visible is not None:
            yield visible
        if layers:
            rel = visible.path if visible is not None else ""
            stack.extend(reversed(_children(rel, layers)))


Below = list[tuple[int, str]]  # (layer index, dir) merged below a path


def _children(rel: str, layers: Below) -> list[tuple[Visible, Below]]:
    """The visible entries of directory `rel`, by name, each with the dirs merged below it."""
    listings: list[tuple[int, dict[str, str]]] = []
    for index, full in layers:
        with os.scandir(full) as it:
            listings.append((index, {de.name: de.path for de in it}))
    names = sorted({name for _, listing in listings for name in listing})
    out: list[tuple[Visible, Below]] = []
    for name in names:
        child = f"{rel}/{name}" if rel else name
        top: Visible | None = None
        below: list[tuple[int, str]] = []
        for index, listing in listings:
            if name not in listing:
                continue
            full = listing[name]
            st = os.lstat(full)
            is_dir = stat.S_ISDIR(st.st_mode)
            if top is None:
                if _is_whiteout(st):
                    break
                top = Visible(child, index, full, st)
            elif not is_dir:
                break  # a lower non-directory is hidden by the directory above it
            if not is_dir:
                break
            below.append((index, full))
            if _is_opaque(full):
                break
        if top is None or stat.S_ISSOCK(top.st.st_mode):
            continue
        out.append((top, below))
    return out


def member(v: Visible) -> Member:
    """The tar member `docker export` would write for this path."""
    st = v.st
    kind = kind_of_mode(st.st_mode)
    assert kind is not None  # sockets are left out by merged()
    xattrs = {}
    for name in KEPT_XATTRS:
        with contextlib.suppress(OSError):  # absent: no xattr of that name
            xattrs[name] = os.getxattr(v.full, name, follow_symlinks=False)
    dev = kind in (Kind.CHAR, Kind.BLOCK)
    return Member(
        path=v.path,
        kind=kind,
        mode=stat.S_IMODE(st.st_mode),
        uid=st.st_uid,
        gid=st.st_gid,
        size=st.st_size if kind is Kind.FILE else 0,
        mtime_ns=st.st_mtime_ns // 1_000_000_000 * 1_000_000_000,
        linkname=os.readlink(v.full) if kind is Kind.SYMLINK else "",
        devmajor=os.major(st.st_rdev) if dev else 0,
        devminor=os.minor(st.st_rdev) if dev else 0,
        xattrs=xattrs,
    )


def origins(dirs: Sequence[str], image_layers: int) -> dict[str, int]:
    """Regular file -> index of its image layer, bottom first (files of docker's init layer,
    above the image's layers, and hard-linked files get none: they are never reused)."""
    top_image = len(dirs) - image_layers
    out: dict[str, int] = {}
    for v in merged(dirs):
        if v.layer >= top_image and stat.S_ISREG(v.st.st_mode) and v.st.st_nlink == 1:
            out[v.path] = len(dirs) - 1 - v.layer
    return out


def apply_merged(
    dirs: Sequence[str],
    layers: Sequence[str],
    writer: Writer,
    adjust: Callable[[Member], Member] | None = None,
) -> dict[str, int]:
    """Write the merged view, linking files the previous version took from the same layer;
    return each file's image layer (file -> layer index, bottom first). `adjust`: what the
    version holds of a member, when not the member as read (netroot.export.image)."""
    origins: dict[str, int] = {}
    reuse = writer.reuse
    top_image = len(dirs) - len(layers)
    shared = 0
    if reuse is not None:
        while shared < min(len(layers), len(reuse.layers)) and (
            layers[shared] == reuse.layers[shared]
        ):
            shared += 1
    first_name: dict[tuple[int, int], str] = {}
    for v in merged(dirs):
        m = member(v) if adjust is None else adjust(member(v))
        origin = len(dirs) - 1 - v.layer if v.layer >= top_image else -1
        if m.kind is not Kind.DIR and v.st.st_nlink > 1:  # docker links any non-dir
            key = (v.layer, v.st.st_ino)
            if key in first_name:
                m = replace(m, kind=Kind.HARDLINK, linkname=first_name[key], size=0)
                writer.apply(m, None)
                continue
            first_name[key] = m.path
        elif m.kind is Kind.FILE and 0 <= origin < shared and reuse is not None:
            prev = reuse.origins.get(m.path) == origin and reuse.entries.get(m.path)
            if prev and not prev.group and prev.same_inode_meta(writer.entry_for(m)):
                writer.link_previous(m, prev)
                origins[m.path] = origin
                continue
        if m.kind is Kind.FILE:
            with open(v.full, "rb", buffering=0) as f:
                writer.apply(m, f)
            if origin >= 0 and v.st.st_nlink == 1:
                origins[m.path] = origin
        else:
            writer.apply(m, None)
    return origins
