"""Remove a directory tree without recursion (a version may be thousands of levels deep).

shutil.rmtree recurses once per level (Python 3.11: RecursionError near 1000 levels, and the
staging dir of a failed export was left behind). This walks with an explicit stack instead.
Paths stay under PATH_MAX because the member filter bounds every in-tree path by what the
export root leaves room for (see TreeGuard.max_path).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable


def remove_tree(path: str, onerror: Callable[[OSError], None] | None = None) -> None:
    """Remove `path` (a directory, or anything else) and all below it, symlinks not followed.

    Errors raise unless `onerror` is given, which then receives each and the walk goes on.
    """
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        _report(exc, onerror)
        return
    if not stat.S_ISDIR(st.st_mode):
        _try(os.unlink, path, onerror)
        return
    # (dir, listed): a dir is listed once, pushed back, and removed when met again (emptied).
    stack: list[tuple[str, bool]] = [(path, False)]
    while stack:
        current, listed = stack.pop()
        if listed:
            _try(os.rmdir, current, onerror)
            continue
        stack.append((current, True))
        try:
            with os.scandir(current) as it:
                entries = list(it)
        except OSError as exc:
            _report(exc, onerror)
            continue
        for de in entries:
            if de.is_dir(follow_symlinks=False):
                stack.append((de.path, False))
            else:
                _try(os.unlink, de.path, onerror)


def _try(fn: Callable[[str], None], path: str, onerror: Callable[[OSError], None] | None) -> None:
    try:
        fn(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        _report(exc, onerror)


def _report(exc: OSError, onerror: Callable[[OSError], None] | None) -> None:
    if onerror is None:
        raise exc
    onerror(exc)


def ignore(_exc: OSError) -> None:
    """An `onerror` that drops errors (best-effort cleanup after a failure)."""
