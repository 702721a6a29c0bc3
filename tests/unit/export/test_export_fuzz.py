"""Property-based fuzz of the member filter and the writer (bounded: CI stays fast).

Invariants, for any archive whatever: nothing is written outside the version directory; a
refusal is a usage error (exit 2) on one line; `current` is intact; after the next run no
partial version or staging is left. And the filter's tree index agrees with a naive model.
"""

from __future__ import annotations

import gzip
import os
from pathlib import Path

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from netroot.errors import Exit, NetrootError
from netroot.export import verbs
from netroot.export.manifest import Layout
from netroot.export.members import Kind, Member, TreeGuard, UnsafeMember
from tests.unit.export.edgekit import GOOD, export_file
from tests.unit.export.tarbuild import Spec, tar_bytes, write_docker_save, write_tar

BENIGN = ["a", "b", "c", "."]
HOSTILE = ["..", "", ".wh.a", ".wh..wh..opq", "x" * 300]
TARGETS = ["a", "a/b", "b", "/etc/passwd", "../outside/secret", "../../x", "/", "a/../.."]
SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# benign parts as often as all the hostile ones together: most archives reach the writer
part = st.one_of(st.sampled_from(BENIGN), st.sampled_from(BENIGN), st.sampled_from(HOSTILE))
names = st.lists(part, min_size=1, max_size=3).map("/".join)
specs = st.builds(
    Spec,
    name=names,
    kind=st.sampled_from("fdlhp"),
    data=st.sampled_from([b"", b"x", b"y" * 600]),
    target=st.one_of(st.sampled_from(TARGETS), names),
    mode=st.sampled_from([0o644, 0o4755, 0o000, 0o1777]),
)
archives = st.lists(st.lists(specs, max_size=8), min_size=1, max_size=3)


def snapshot(top: Path, skip: Path) -> dict[str, tuple[int, bytes]]:
    """Every path under `top` but `skip` (mode, content): what must never change."""
    out: dict[str, tuple[int, bytes]] = {}
    for dirpath, dirnames, filenames in os.walk(top):
        if Path(dirpath) == skip.parent:
            dirnames[:] = [d for d in dirnames if Path(dirpath, d) != skip]
            filenames = [f for f in filenames if Path(dirpath, f) != skip]
        for name in [*dirnames, *filenames]:
            p = Path(dirpath, name)
            st_ = p.lstat()
            data = p.read_bytes() if p.is_file() and not p.is_symlink() else b""
            out[str(p.relative_to(top))] = (st_.st_mode, data)
    return out


@SETTINGS
@given(layers=archives, compressed=st.booleans())
def test_any_archive_is_written_safely_or_refused_cleanly(
    tmp_path_factory: object, layers: list[list[Spec]], compressed: bool
) -> None:
    base: Path = tmp_path_factory.mktemp("fuzz")  # type: ignore[attr-defined]
    (base / "outside").mkdir()
    (base / "outside/secret").write_bytes(b"untouched")
    root = base / "root"
    good = export_file(write_tar(base / "good.tar", GOOD), root).manifest.version
    if len(layers) == 1:
        data = tar_bytes(layers[0])
        archive = base / "fuzz.tar"
        archive.write_bytes(gzip.compress(data) if compressed else data)
    else:
        archive = write_docker_save(base / "fuzz.tar", layers, ["fuzz:1"])
    before = snapshot(base, root / "img")
    layout = Layout(root, "img")
    try:
        result = export_file(archive, root)
    except NetrootError as exc:
        event("refused")
        assert exc.code == Exit.USAGE, exc.message
        assert "\n" not in exc.message
        assert verbs.current_id(layout) == good
    else:
        event("exported")
        assert verbs.current_id(layout) == result.manifest.version
        assert verbs.verify(root, "img")[1] == []
    assert snapshot(base, root / "img") == before  # nothing written outside
    assert verbs.verify(root, "img", good)[1] == []  # the old version untouched
    export_file(write_tar(base / "next.tar", [*GOOD, Spec("n", data=b"n")]), root)
    assert list(layout.staging.iterdir()) == []
    for child in layout.versions.iterdir():
        if child.is_dir():
            assert layout.manifest_path(child.name).exists()


@SETTINGS
@given(
    flips=st.lists(st.tuples(st.integers(0, 6000), st.integers(1, 255)), min_size=1, max_size=4),
    gz=st.booleans(),
)
def test_corrupt_bytes_are_refused_cleanly(
    tmp_path_factory: object, flips: list[tuple[int, int]], gz: bool
) -> None:
    base: Path = tmp_path_factory.mktemp("flip")  # type: ignore[attr-defined]
    data = tar_bytes([*GOOD, Spec("etc", "d"), Spec("etc/f", data=b"z" * 3000)])
    raw = bytearray(gzip.compress(data) if gz else data)
    for at, xor in flips:
        raw[at % len(raw)] ^= xor
    archive = base / "flip.tar"
    archive.write_bytes(bytes(raw))
    try:
        export_file(archive, base / "root")
    except NetrootError as exc:
        assert exc.code == Exit.USAGE and "\n" not in exc.message, exc.message
    # accepted: the flip hit bytes tar ignores (padding, a name still valid), or content
    # of an uncompressed tar (a plain tar has no checksum over data)


ops = st.lists(st.tuples(st.sampled_from(["add", "dir", "link", "rm", "opq"]), names), max_size=30)


@settings(max_examples=200, deadline=None)
@given(ops=ops)
def test_tree_index_agrees_with_a_naive_model(ops: list[tuple[str, str]]) -> None:
    guard = TreeGuard()
    for op, raw in ops:
        path = "/".join(p for p in raw.split("/") if p not in ("", ".", ".."))
        if not path:
            continue
        naive = set(guard.kinds)
        below = {p for p in naive if p == path or p.startswith(path + "/")}
        try:
            if op in ("add", "dir"):
                kind = Kind.DIR if op == "dir" else Kind.FILE
                was_dir = guard.kinds.get(path) is Kind.DIR
                gone = guard.admit(Member(path, kind, 0, 0, 0, 0, 0), layered=True)
                # only a directory replaced by a non-directory takes its subtree with it
                assert set(gone) == (below if was_dir and kind is not Kind.DIR else set())
            elif op == "link":
                guard.admit(Member(path, Kind.HARDLINK, 0, 0, 0, 0, 0, "a"), layered=True)
            elif op == "rm":
                assert set(guard.remove(path)) == below
            elif guard.kinds.get(path) is Kind.DIR:
                gone = guard.clear_dir(path)
                assert set(gone) == {p for p in naive if p.startswith(path + "/")}
        except UnsafeMember:
            assert set(guard.kinds) == naive  # a refusal records nothing
        for p in guard.kinds:  # every recorded path's ancestors are recorded directories
            parent = p.rpartition("/")[0]
            assert not p or guard.kinds[parent] is Kind.DIR
        assert set(guard.kinds) == {""} | {c for cs in guard._children.values() for c in cs}


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.sampled_from([*TARGETS, "layer0/layer.tar"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=6,
)
manifests = st.one_of(
    json_values,
    st.lists(
        st.fixed_dictionaries(
            {},
            optional={
                "Config": st.one_of(st.just("config.json"), json_values),
                "Layers": st.one_of(st.just(["layer0/layer.tar"]), json_values),
                "RepoTags": json_values,
            },
        ),
        max_size=2,
    ),
)


@SETTINGS
@given(manifest=manifests)
def test_any_manifest_is_exported_or_refused_cleanly(
    tmp_path_factory: object, manifest: object
) -> None:
    base: Path = tmp_path_factory.mktemp("manifest")  # type: ignore[attr-defined]
    archive = write_docker_save(base / "s.tar", [GOOD], ["m:1"], manifest=manifest)
    try:
        result = export_file(archive, base / "root")
    except NetrootError as exc:
        event("refused")
        assert exc.code == Exit.USAGE and "\n" not in exc.message, exc.message
    else:
        event("exported")
        assert result.manifest.source["kind"] == "docker-save"
