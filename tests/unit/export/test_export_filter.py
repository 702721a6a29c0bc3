"""The tar member filter on synthetic hostile archives: nothing lands outside staging."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from netroot.export.members import (
    Kind,
    Member,
    TreeGuard,
    UnsafeMember,
    normalize_path,
    whiteout_target,
)
from netroot.export.tarstream import NotATar, read_members
from netroot.export.writer import Writer
from tests.unit.export.tarbuild import Spec, tar_bytes


def apply_all(root: Path, data: bytes) -> Writer:
    w = Writer(root)
    for m, content in read_members(io.BytesIO(data), "test.tar"):
        w.apply(m, content if m.kind is Kind.FILE else None)
    w.finish()
    return w


@pytest.mark.parametrize(
    ("raw", "why"),
    [("/etc/passwd", "absolute"), ("a/../../x", "'..'"), ("..", "'..'"), ("a\0b", "NUL")],
)
def test_normalize_refuses(raw: str, why: str) -> None:
    with pytest.raises(UnsafeMember, match=why) as err:
        normalize_path(raw)
    assert repr(raw) in err.value.message  # the error names the member


def test_normalize_cleans() -> None:
    assert normalize_path("./a//b/./c/") == "a/b/c"
    assert normalize_path("./") == ""


def m(path: str, kind: Kind = Kind.FILE, link: str = "") -> Member:
    return Member(path, kind, 0o644, 0, 0, 0, 0, link)


def test_guard_refuses_write_through_symlink() -> None:
    g = TreeGuard()
    g.admit(m("etc", Kind.SYMLINK, "/etc"))
    with pytest.raises(UnsafeMember, match="parent 'etc' is a symlink"):
        g.admit(m("etc/passwd"))
    with pytest.raises(UnsafeMember, match="symlink"):
        g.admit(m("etc/x/y", Kind.DIR))


def test_guard_hard_links() -> None:
    g = TreeGuard()
    g.admit(m("d", Kind.DIR))
    g.admit(m("f"))
    g.admit(m("l", Kind.SYMLINK, "/"))
    g.admit(m("h1", Kind.HARDLINK, "f"))
    g.admit(m("h2", Kind.HARDLINK, "l"))  # a hard link to a symlink is the symlink itself
    with pytest.raises(UnsafeMember, match="not in the archive"):
        g.admit(m("h3", Kind.HARDLINK, "etc/shadow"))
    with pytest.raises(UnsafeMember, match="directory"):
        g.admit(m("h4", Kind.HARDLINK, "d"))
    with pytest.raises(UnsafeMember, match="symlink"):
        g.admit(m("h5", Kind.HARDLINK, "l/etc/shadow"))


def test_guard_dir_replacement_only_between_layers() -> None:
    g = TreeGuard()
    g.admit(m("d", Kind.DIR))
    g.admit(m("d/x"))
    with pytest.raises(UnsafeMember, match="replace a directory"):
        g.admit(m("d"))
    assert g.admit(m("d"), layered=True) == ["d", "d/x"]
    assert "d/x" not in g.kinds


def test_whiteout_names() -> None:
    assert whiteout_target("a/.wh.b") == ("a/b", False)
    assert whiteout_target(".wh.top") == ("top", False)
    assert whiteout_target("a/.wh..wh..opq") == ("a", True)
    assert whiteout_target("a/b") is None
    with pytest.raises(UnsafeMember):
        whiteout_target("a/.wh...")


def test_symlink_then_file_through_it_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    staging = tmp_path / "staging"
    staging.mkdir()
    data = tar_bytes([Spec("esc", "l", target=str(outside)), Spec("esc/pwned", data=b"x")])
    with pytest.raises(UnsafeMember, match="esc/pwned"):
        apply_all(staging, data)
    assert list(outside.iterdir()) == []
    assert os.readlink(staging / "esc") == str(outside)  # absolute symlinks are kept as is


def test_relative_escape_symlink_kept_but_never_followed(tmp_path: Path) -> None:
    staging = tmp_path / "staging"
    staging.mkdir()
    data = tar_bytes([Spec("up", "l", target="../../.."), Spec("up/x", "d")])
    with pytest.raises(UnsafeMember, match="'up/x'"):
        apply_all(staging, data)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["staging"]


def test_hardlink_escape_refused(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("s")
    staging = tmp_path / "staging"
    staging.mkdir()
    for target in ("../secret", str(secret)):
        with pytest.raises(UnsafeMember):
            apply_all(staging, tar_bytes([Spec("h", "h", target=target)]))
    assert secret.stat().st_nlink == 1


def test_not_a_tar() -> None:
    with pytest.raises(NotATar, match="not a tar"):
        list(read_members(io.BytesIO(b"hello world, this is not a tar" * 40), "x"))
    with pytest.raises(NotATar, match="not a tar"):
        list(read_members(io.BytesIO(b""), "x"))


def test_truncated_tar() -> None:
    data = tar_bytes([Spec("f", data=b"a" * 5000)])
    with pytest.raises(NotATar, match="truncated"):
        for _, content in read_members(io.BytesIO(data[:2048]), "x"):
            content.read()


NAME_PARTS = st.sampled_from(["a", "b", "..", ".", "", "/", "c"])
NAMES = st.lists(NAME_PARTS, min_size=1, max_size=4).map("/".join)
TARGETS = st.one_of(NAMES, st.sampled_from(["/", "/tmp", "../..", "../outside", "a/../.."]))
SPECS = st.lists(
    st.builds(
        Spec,
        name=NAMES,
        kind=st.sampled_from(["f", "d", "l", "h"]),
        data=st.binary(max_size=64),
        target=TARGETS,
    ),
    max_size=12,
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(specs=SPECS)
def test_hostile_archives_never_escape(
    tmp_path_factory: pytest.TempPathFactory, specs: list[Spec]
) -> None:
    base = tmp_path_factory.mktemp("hostile")
    staging = base / "box" / "staging"
    staging.mkdir(parents=True)
    outside = base / "outside"
    outside.mkdir()
    try:
        apply_all(staging, tar_bytes(specs))
    except UnsafeMember as exc:
        assert exc.message.startswith("refused archive member ")  # names the member
    # Nothing created beside staging or anywhere outside it.
    assert [p.name for p in (base / "box").iterdir()] == ["staging"]
    assert sorted(p.name for p in base.iterdir()) == ["box", "outside"]
    assert list(outside.iterdir()) == []
    for dirpath, dirnames, filenames in os.walk(staging):
        for name in dirnames + filenames:
            real = os.path.realpath(os.path.join(dirpath, name), strict=False)
            path = os.path.join(dirpath, name)
            if not os.path.islink(path):
                assert real.startswith(str(staging.resolve()))
