"""Every refusal is clean: exit 2, one line naming the member as the archive names it."""

from __future__ import annotations

import bz2
import errno
import gzip
import lzma
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from netroot.export.members import Kind, Member, UnsafeMember
from netroot.export.writer import member_faults
from tests.unit.export.edgekit import GOOD, assert_refused, export_file, info, raw_tar
from tests.unit.export.tarbuild import Spec, tar_bytes


def archive(tmp_path: Path, data: bytes, name: str = "bad.tar") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(
    ("ti", "needles"),
    [
        (info("a" * 300), ["longer than 255 bytes"]),
        (info("/".join(["d"] * 2100)), ["longer than 4095 bytes"]),
        (info("l", tarfile.SYMTYPE, linkpath="x" * 5000), ["'l'", "symlink target longer"]),
        (info("dev", tarfile.CHRTYPE), ["'dev'", "device number 5000:1 is out of range"]),
        (info("u", uid="-5"), ["'u'", "uid -5 is out of range"]),
        (info("u", uid=str(1 << 40)), ["'u'", "uid 1099511627776 is out of range"]),
        (info("g", gid="4294967295"), ["'g'", "gid 4294967295"]),
        (info("t", mtime="nan"), ["'t'", "mtime 'nan' is not a number"]),
        (info("t", mtime="1e30"), ["'t'", "outside 1901..2446"]),
        (info("t", mtime="-99999999999"), ["'t'", "outside 1901..2446"]),
        (info("s", **{"size": "-1"}), ["'s'", "negative size"]),
        (info("x", **{"SCHILY.xattr.foo.bar": "v"}), ["'x'", "'foo.bar': unsupported namespace"]),
        (info("x", **{"SCHILY.xattr.user.v": "v" * 70000}), ["'x'", "larger than 65536"]),
        (
            info("x", **{"SCHILY.xattr.system.posix_acl_access": "\x02\0\0\0"}),
            ["'x'", "POSIX ACL xattr 'system.posix_acl_access' is not supported"],
        ),
        (info("x", **{"SCHILY.acl.access": "user::rw-"}), ["'x'", "POSIX ACLs"]),
        (
            info("l", tarfile.SYMTYPE, linkpath="t", **{"SCHILY.xattr.user.a": "1"}),
            ["'l'", "xattr 'user.a' on a symlink"],
        ),
        (info("weird", b"Z"), ["'weird'", "unsupported member type"]),
    ],
)
def test_header_refusals(tmp_path: Path, ti: tarfile.TarInfo, needles: list[str]) -> None:
    if ti.type == tarfile.CHRTYPE:
        ti.devmajor, ti.devminor = 5000, 1
    assert_refused(tmp_path, archive(tmp_path, raw_tar([(ti, b"")])), *needles)


def test_negative_uid_in_base256(tmp_path: Path) -> None:
    ti = info("neg")
    ti.uid = -5  # GNU base-256 numbers can be negative
    data = raw_tar([(ti, b"")], tarfile.GNU_FORMAT)
    assert_refused(tmp_path, archive(tmp_path, data), "'neg'", "uid -5 is out of range")


def test_name_too_long_for_this_export_root(tmp_path: Path) -> None:
    deep = "/".join(["d"] * 1900) + "/f"  # fine under a short root, too long under this one
    long_root = tmp_path / ("r" * 200) / ("s" * 200)
    data = raw_tar([(info(deep), b"")])
    from netroot.errors import NetrootError

    with pytest.raises(NetrootError) as err:
        export_file(archive(tmp_path, data), long_root)
    assert err.value.code == 2 and "name too long for the filesystem here" in err.value.message
    assert list((long_root / "img/.staging").iterdir()) == []


def test_xattr_the_filesystem_refuses(tmp_path: Path) -> None:
    # ext4 keeps xattrs in one 4 KiB block: it answers ENOSPC with a disk far from full.
    specs = [*GOOD, Spec("big", data=b"x", xattrs={"user.big": b"v" * 30000})]
    path = archive(tmp_path, tar_bytes(specs))
    try:
        os.setxattr(tmp_path, "user.probe", b"v" * 30000)
    except OSError as exc:
        message = assert_refused(tmp_path, path, "'big'", "xattr 'user.big' (30000 bytes)")
        assert "no space" not in message.lower() or exc.errno != errno.ENOSPC
        return
    pytest.skip("this filesystem holds a 30000-byte xattr")


def test_filesystem_faults_of_a_member_name_it() -> None:
    m = Member("a/b", Kind.HARDLINK, 0, 0, 0, 0, 0, "a/c")
    for code, why in ((errno.EMLINK, "more hard links"), (errno.ENAMETOOLONG, "too long")):
        with pytest.raises(UnsafeMember, match=why) as err, member_faults(m):
            raise OSError(code, os.strerror(code))
        assert "'a/b'" in err.value.message
    with pytest.raises(OSError), member_faults(m):  # the disk's fault stays the disk's
        raise OSError(errno.ENOSPC, "No space left on device")


def test_truncated_tar_names_the_member(tmp_path: Path) -> None:
    data = tar_bytes([*GOOD, Spec("big", data=b"b" * 50_000)])
    cut = archive(tmp_path, data[: len(data) - 30_000])
    assert_refused(tmp_path, cut, "'big'", "truncated")


@pytest.mark.parametrize("method", ["gzip", "bz2", "xz"])
def test_corrupt_compressed_stream(tmp_path: Path, method: str) -> None:
    payload = bytes(range(256)) * 400
    data = tar_bytes([*GOOD, Spec("blob", data=payload)])
    if method == "gzip":
        packed = bytearray(gzip.compress(data, compresslevel=0))  # stored blocks: no inflate error
    elif method == "bz2":
        packed = bytearray(bz2.compress(data))
    else:
        packed = bytearray(lzma.compress(data))
    at = len(packed) // 2
    packed[at] ^= 0x01
    assert_refused(tmp_path, archive(tmp_path, bytes(packed), f"flip.{method}"), "compressed")


def test_truncated_gzip(tmp_path: Path) -> None:
    data = gzip.compress(tar_bytes([*GOOD, Spec("blob", data=os.urandom(20_000))]))
    assert_refused(tmp_path, archive(tmp_path, data[:-6], "cut.tar.gz"), "truncated")


def test_intact_gzip_is_exported(tmp_path: Path) -> None:
    data = gzip.compress(tar_bytes([*GOOD, Spec("blob", data=b"z" * 5000)]))
    result = export_file(archive(tmp_path, data, "ok.tar.gz"), tmp_path / "root")
    version = tmp_path / "root/img/versions" / result.manifest.version
    assert (version / "blob").stat().st_size == 5000


def test_huge_gnu_long_name_is_refused_cheaply(tmp_path: Path) -> None:
    # 1 MiB of name in a small .tar.gz: refused after reading a bounded prefix of it.
    ti = info("n" * (1 << 20))
    data = gzip.compress(raw_tar([(ti, b"")], tarfile.GNU_FORMAT))
    message = assert_refused(tmp_path, archive(tmp_path, data, "long.tar.gz"), "GNU long name")
    assert "1048577 bytes" in message and "(1048576 chars)" not in message


def test_huge_pax_header_is_refused(tmp_path: Path) -> None:
    ti = info("p", comment="c" * (2 << 20))
    assert_refused(tmp_path, archive(tmp_path, raw_tar([(ti, b"")])), "pax header of")


def test_empty_tree_is_refused(tmp_path: Path) -> None:
    root_only = raw_tar([(info("./", tarfile.DIRTYPE), b"")])
    assert_refused(tmp_path, archive(tmp_path, root_only), "empty tree")


SPARSE_FORMATS = {
    ("--format=gnu",): "GNU old sparse format",
    ("--format=pax", "--sparse-version=0.0"): "GNU sparse PAX 0.0",
    ("--format=pax", "--sparse-version=0.1"): "GNU sparse PAX 0.1",
    ("--format=pax", "--sparse-version=1.0"): "GNU sparse PAX 1.0",
}


@pytest.mark.skipif(shutil.which("tar") is None, reason="GNU tar makes the sparse archives")
@pytest.mark.parametrize("flags", list(SPARSE_FORMATS))
def test_sparse_formats_refused_by_name(tmp_path: Path, flags: tuple[str, ...]) -> None:
    src = tmp_path / "src"
    src.mkdir()
    with (src / "holes.img").open("wb") as f:
        f.seek(1 << 20)
        f.write(b"data in the middle")
        f.truncate(4 << 20)
    out = tmp_path / "sparse.tar"
    subprocess.run(["tar", "-C", str(src), "--sparse", *flags, "-cf", str(out), "."], check=True)
    assert_refused(tmp_path, out, "holes.img", SPARSE_FORMATS[flags], "not supported")
