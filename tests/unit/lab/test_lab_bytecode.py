"""A foreign tree's bytecode compiled on the host (netroot/lab/host/bytecode.py): what py3compile
would compile, read from a synthetic tree, and the .pyc files it writes, held against
py_compile's own output for the same source (the comparison of two whole mmdebstrap trees is
in bench/README.md: it needs the builds)."""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import json
import marshal
import os
import platform
import py_compile
import sys
import types
from pathlib import Path

import pytest

from netroot.lab import recipes
from netroot.lab.host import bytecode, images
from netroot.lab.host.bytecode import Call

V311 = (3, 11)
# dh_python3's snippet, its trailing blank too.
DH_SNIPPET = """#!/bin/sh
set -e
if command -v py3compile >/dev/null 2>&1; then
\tpy3compile -p python3-torch:arm64\x20
fi
if command -v pypy3compile >/dev/null 2>&1; then
\tpypy3compile -p python3-torch:arm64  || true
fi
"""


def test_version_ranges_as_debpython_reads_them() -> None:
    assert bytecode.parse_vrange("3.0-") == ((3, 0), None)
    assert bytecode.parse_vrange("-3.7") == (None, (3, 7))
    assert bytecode.parse_vrange("3.1-3.3") == ((3, 1), (3, 3))
    assert bytecode.parse_vrange("3.2") == ((3, 2), (3, 2))
    assert bytecode.parse_vrange("") == bytecode.parse_vrange("-") == (None, None)
    assert bytecode.in_range(V311, ((3, 0), None))
    assert not bytecode.in_range(V311, ((3, 1), (3, 11)))  # the upper bound is excluded
    assert not bytecode.in_range(V311, ((3, 2), (3, 2)))
    with pytest.raises(ValueError, match="invalid"):
        bytecode.parse_vrange("three")


def test_postinst_lines_read_here_and_those_left_to_py3compile() -> None:
    calls, other = bytecode.parse_postinst(DH_SNIPPET)
    assert calls == [Call("python3-torch:arm64", ())] and other == []
    calls, other = bytecode.parse_postinst("\tpy3compile -p python3 /usr/share/python3/\n")
    assert calls == [Call("python3", ("/usr/share/python3/",))]
    calls, other = bytecode.parse_postinst(
        "py3compile -p foo -V 3.11 /usr/share/foo\n  py3compile -p $PKG\n"
    )
    assert calls == [] and other == [
        ["py3compile", "-p", "foo", "-V", "3.11", "/usr/share/foo"],
        ["sh", "-c", "py3compile -p $PKG"],
    ]


def test_files_py3compile_compiles_public_private_and_excluded() -> None:
    listed = [
        "/.",
        "/usr/lib/python3/dist-packages/torch/__init__.py",
        "/usr/lib/python3/dist-packages/torch/tests/test_x.py",
        "/usr/lib/python3/dist-packages/torch/lib/libtorch.so",
        "/usr/lib/python3.11/dist-packages/old.py",
        "/usr/lib/python3.9/dist-packages/other.py",  # another version's: not compiled
        "/usr/share/foo/private.py",
        "/usr/bin/script.py",
    ]
    no_tests = bytecode.parse_bcep(recipes.NO_TESTS_BCEP + "\n# a comment\n")
    public = bytecode.files_to_compile(Call("p", ()), listed, no_tests, V311)
    assert public == [
        "/usr/lib/python3/dist-packages/torch/__init__.py",
        "/usr/lib/python3.11/dist-packages/old.py",
    ]
    private = bytecode.files_to_compile(Call("p", ("/usr/share/foo",)), listed, no_tests, V311)
    assert private == ["/usr/share/foo/private.py"]
    every = no_tests + bytecode.parse_bcep(bytecode.EXCLUDE_ALL)
    assert bytecode.files_to_compile(Call("p", ()), listed, every, V311) == []
    assert bytecode.files_to_compile(Call("p", ("/usr/share/foo",)), listed, every, V311) == []


def test_a_symlink_in_the_tree_resolves_inside_it(tmp_path: Path) -> None:
    (tmp_path / "usr/share/foo").mkdir(parents=True)
    (tmp_path / "usr/lib").mkdir(parents=True)
    os.symlink("/usr/share/foo", tmp_path / "usr/lib/foo")
    os.symlink("../../../../etc", tmp_path / "usr/share/foo/up")
    assert bytecode.in_tree(tmp_path, "/usr/lib/foo/x.py") == tmp_path / "usr/share/foo/x.py"
    assert bytecode.in_tree(tmp_path, "/usr/share/foo/up/passwd") == tmp_path / "etc/passwd"


def test_a_package_list_whatever_the_postinst_calls_it(tmp_path: Path) -> None:
    info = tmp_path / "var/lib/dpkg/info"
    info.mkdir(parents=True)
    (info / "python3-numpy.list").write_text("/a.py\n")  # not Multi-Arch: same
    (info / "python3-torch:arm64.list").write_text("/b.py\n")  # Multi-Arch: same
    assert bytecode.package_list(tmp_path, "python3-numpy:arm64") == ["/a.py"]
    assert bytecode.package_list(tmp_path, "python3-numpy") == ["/a.py"]
    assert bytecode.package_list(tmp_path, "python3-torch") == ["/b.py"]
    with pytest.raises(FileNotFoundError, match="python3-gone"):
        bytecode.package_list(tmp_path, "python3-gone")


def test_dpkg_status_and_debian_versions() -> None:
    status = (
        "Package: python3.11-minimal\nStatus: install ok installed\nVersion: 3.11.2-6+deb12u8\n"
        " a continuation: line\n\nPackage: gone\nStatus: deinstall ok config-files\nVersion: 1\n"
    )
    assert bytecode.dpkg_versions(status) == {"python3.11-minimal": "3.11.2-6+deb12u8"}
    assert bytecode.upstream("3.11.2-6+deb12u8") == "3.11.2"
    assert bytecode.upstream("1:2.0-1") == "2.0"
    assert bytecode.default_python("[DEFAULT]\ndefault-version = python3.11\n") == "python3.11"


def _tree(root: Path, release: str, magic: bytes) -> tuple[str, str]:
    """A tree as mmdebstrap leaves it before the customize hook, for this interpreter."""
    python = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    tag = sys.implementation.cache_tag
    for d in ("usr/share/python3/bcep", "var/lib/dpkg/info", f"usr/lib/{python}/__pycache__"):
        (root / d).mkdir(parents=True)
    (root / "usr/share/python3/debian_defaults").write_text(f"default-version = {python}\n")
    (root / f"usr/lib/{python}/__pycache__/os.{tag}.pyc").write_bytes(magic + bytes(12))
    (root / "var/lib/dpkg/status").write_text(
        f"Package: {python}-minimal\nStatus: install ok installed\nVersion: {release}-1\n"
    )
    bcep = root / "usr/share/python3/bcep"
    (bcep / bytecode.BCEP_FILE).write_text(bytecode.EXCLUDE_ALL + "\n")
    (bcep / "netroot-no-tests").write_text(recipes.NO_TESTS_BCEP + "\n")
    pkg = root / "usr/lib/python3/dist-packages/pkg"
    (pkg / "tests").mkdir(parents=True)
    (pkg / "__init__.py").write_text('S = {"a", "b", "c"}\n\ndef f():\n    return 1 / 0\n')
    (pkg / "tests/test_it.py").write_text("x = 1\n")
    (root / "usr/share/pkg").mkdir(parents=True)
    (root / "usr/share/pkg/real.py").write_text("y = 2\n")
    os.symlink("/usr/share/pkg/real.py", pkg / "linked.py")
    names = ["__init__.py", "tests/test_it.py", "linked.py"]
    listing = "".join(f"/usr/lib/python3/dist-packages/pkg/{n}\n" for n in names)
    (root / "var/lib/dpkg/info/python3-pkg.list").write_text(listing)
    (root / "var/lib/dpkg/info/python3-pkg.postinst").write_text(
        DH_SNIPPET.replace("python3-torch:arm64", "python3-pkg")
    )
    return python, tag


def _filenames(code: types.CodeType) -> set[str]:
    out = {code.co_filename}
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            out |= _filenames(const)
    return out


def test_the_tree_compiled_as_py3compile_would(tmp_path: Path) -> None:
    root = tmp_path / "root"
    magic = importlib.util.MAGIC_NUMBER
    _, tag = _tree(root, platform.python_version(), magic)
    assert bytecode.compile_tree(root, [sys.executable]) == 2
    assert not (root / "usr/share/python3/bcep" / bytecode.BCEP_FILE).exists()
    pkg = root / "usr/lib/python3/dist-packages/pkg"
    assert sorted(p.name for p in (pkg / "__pycache__").iterdir()) == [
        f"__init__.{tag}.pyc",
        f"linked.{tag}.pyc",
    ]
    assert not (pkg / "tests/__pycache__").exists()  # the tree's own exclusion still holds
    assert not (root / "usr/share/pkg/__pycache__").exists()  # the symlink's name, not its target
    for name in ("__init__", "linked"):
        made = (pkg / f"__pycache__/{name}.{tag}.pyc").read_bytes()
        # What py_compile makes of the same source, as py3compile's worker calls it.
        source = bytecode.in_tree(root, f"/usr/lib/python3/dist-packages/pkg/{name}.py")
        ref = py_compile.compile(str(source), cfile=str(tmp_path / f"{name}.pyc"), doraise=True)
        assert ref is not None
        want = Path(ref).read_bytes()
        assert made[:16] == want[:16]  # magic, flags (timestamp), source mtime and size
        code, ref_code = marshal.loads(made[16:]), marshal.loads(want[16:])
        assert code == ref_code  # code, constants, names, line table (not co_filename)
        assert _filenames(code) == {f"/usr/lib/python3/dist-packages/pkg/{name}.py"}
        assert (pkg / f"__pycache__/{name}.{tag}.pyc").stat().st_mode & 0o777 == 0o644


def test_another_release_is_left_to_py3compile(tmp_path: Path) -> None:
    python, _ = _tree(tmp_path, "9.9.9", importlib.util.MAGIC_NUMBER)
    assert bytecode.host_compiler(tmp_path, python, [sys.executable]) is None
    (tmp_path / "var/lib/dpkg/status").write_text(
        (tmp_path / "var/lib/dpkg/status").read_text().replace("9.9.9", platform.python_version())
    )
    assert bytecode.host_compiler(tmp_path, python, [sys.executable]) is not None
    pyc = next((tmp_path / "usr/lib").glob("python3.*/__pycache__/os.*.pyc"))
    pyc.write_bytes(b"\0\0\r\n" + bytes(12))  # another bytecode format
    assert bytecode.host_compiler(tmp_path, python, [sys.executable]) is None


def test_foreign_trees_compile_on_the_host_and_their_keys_changed() -> None:
    for recipe in recipes.ALL:
        assert recipe.host_bytecode == (recipe.arch != "amd64"), recipe.name
        if recipe.host_bytecode:
            assert dataclasses.replace(recipe, host_bytecode=False).key != recipe.key
            options = images.build_options(recipe)
            assert any(o.startswith("--customize-hook=") and "bytecode.py" in o for o in options)
            assert any(bytecode.BCEP_FILE in o for o in options if o.startswith("--essential"))
        else:
            assert not any("bytecode" in o for o in images.build_options(recipe))
    # The native trees keep their keys (the shared caches' amd64 trees stay warm).
    shape = dataclasses.asdict(recipes.SERVER)
    for late in ("apt_opts", "hooks", "host_bytecode"):
        del shape[late]
    blob = json.dumps(shape, sort_keys=True).encode()
    assert recipes.SERVER.key == hashlib.sha256(blob).hexdigest()[:12]
