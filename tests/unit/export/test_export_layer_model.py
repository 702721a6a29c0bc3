"""Property: a docker save archive exports to what a plain model of layer semantics predicts."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from netroot.errors import UsageError
from netroot.export import overlay, sources, verbs
from netroot.export.members import UnsafeMember
from netroot.export.request import Source
from netroot.export.writer import Writer
from tests.unit.export.tarbuild import Spec, write_docker_save

Model = dict[str, tuple[str, str]]  # path -> (kind, content or symlink target)

PATHS = st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=3).map("/".join)


def _with_parent(path: str, marker: Spec) -> list[Spec]:
    # As in a real layer: the directory holding a whiteout or opaque marker is in the layer.
    head = marker.name.rpartition("/")[0]
    return ([Spec(head, "d")] if head else []) + [marker]


MEMBERS = st.one_of(
    st.builds(lambda p, d: [Spec(p, "f", data=d.encode())], PATHS, st.sampled_from(["1", "2"])),
    st.builds(lambda p: [Spec(p, "d")], PATHS),
    st.builds(lambda p: [Spec(p, "l", target="/elsewhere")], PATHS),
    st.builds(lambda p: _with_parent(p, Spec(_wh(p))), PATHS),
    st.builds(lambda p: _with_parent(p, Spec(p + "/.wh..wh..opq")), PATHS),
)
LAYERS = st.lists(
    st.lists(MEMBERS, max_size=6).map(lambda groups: [s for g in groups for s in g]),
    min_size=1,
    max_size=3,
)


def _wh(path: str) -> str:
    head, _, base = path.rpartition("/")
    return f"{head}/.wh.{base}" if head else f".wh.{base}"


def _drop(model: Model, path: str, self_too: bool = True) -> None:
    for p in [p for p in model if p.startswith(path + "/") or (self_too and p == path)]:
        del model[p]


def predict(layers: list[list[Spec]]) -> Model | None:
    """The merged tree, or None when some member would write below a non-directory."""
    model: Model = {}
    for layer in layers:
        for s in layer:
            base = s.name.rpartition("/")[2]
            head = s.name.rpartition("/")[0]
            if base == ".wh..wh..opq":
                if model.get(head, ("d",))[0] == "d" and _reachable(model, head):
                    _drop(model, head, self_too=False)
            elif base.startswith(".wh."):
                target = f"{head}/{base[4:]}" if head else base[4:]
                if _reachable(model, target):
                    _drop(model, target)
        for s in layer:
            if ".wh." in s.name:
                continue
            if not _reachable(model, s.name):
                return None
            parts = s.name.split("/")
            for i in range(1, len(parts)):
                model.setdefault("/".join(parts[:i]), ("d", ""))
            old = model.get(s.name)
            if s.kind == "d":
                if old is not None and old[0] != "d":
                    del model[s.name]
                model[s.name] = ("d", "")
            else:
                if old is not None and old[0] == "d":
                    _drop(model, s.name)
                model[s.name] = (s.kind, s.data.decode() if s.kind == "f" else s.target)
    return model


def _reachable(model: Model, path: str) -> bool:
    """No ancestor of `path` is a non-directory."""
    parts = path.split("/")
    return all(model.get("/".join(parts[:i]), ("d",))[0] == "d" for i in range(1, len(parts)))


def observe(root: Path) -> Model:
    out: Model = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            full = Path(dirpath, name)
            rel = str(full.relative_to(root))
            if full.is_symlink():
                out[rel] = ("l", os.readlink(full))
            elif full.is_dir():
                out[rel] = ("d", "")
            else:
                out[rel] = ("f", full.read_text())
    return out


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(layers=LAYERS)
def test_layers_match_the_model(
    tmp_path_factory: pytest.TempPathFactory, layers: list[list[Spec]]
) -> None:
    base = tmp_path_factory.mktemp("model")
    archive = write_docker_save(base / "save.tar", layers, ["m/odel:1"])
    info = sources.inspect_archive(archive)
    expected = predict(layers)
    try:
        source = Source(info, lambda w: sources.apply_archive(info, w))
        result = verbs.export(source, base / "r", "m")
    except UnsafeMember:
        assert expected is None
        return
    except UsageError as exc:  # nothing left at all: refused, a board cannot run nothing
        assert "empty tree" in exc.message and expected is not None
        assert not [p for p in expected if p]
        return
    assert expected is not None
    got = observe(base / "r/m/versions" / result.manifest.version)
    for placeholder in ("etc", "etc/hostname", "etc/resolv.conf"):  # leftovers add these
        got.pop(placeholder, None)
    assert got == expected


def _layer_dir(root: Path, layer: list[Spec]) -> None:
    """The same layer as overlay2 stores it: 0:0 char devices and opaque xattrs."""
    root.mkdir()

    def clear(p: Path) -> None:
        if p.is_symlink() or (p.exists() and not p.is_dir()):
            p.unlink()
        elif p.is_dir():
            shutil.rmtree(p)

    def parents(p: Path) -> None:
        for parent in reversed(p.relative_to(root).parents[:-1] if p != root else []):
            q = root / parent
            if q.is_symlink() or (q.exists() and not q.is_dir()):
                raise ValueError("a parent is not a directory in this layer")
            q.mkdir(exist_ok=True)

    for s in layer:  # whiteouts first: they only ever hide lower layers
        head, _, base = s.name.rpartition("/")
        p = root / head
        if base == ".wh..wh..opq":
            parents(p / "x")
            clear(p) if not p.is_dir() else None
            p.mkdir(exist_ok=True)
            os.setxattr(p, "trusted.overlay.opaque", b"y")
        elif base.startswith(".wh."):
            parents(p / base[4:])
            clear(p / base[4:])
            os.mknod(p / base[4:], 0o020000, os.makedev(0, 0))
    for s in layer:
        if ".wh." in s.name:
            continue
        p = root / s.name
        parents(p)
        if s.kind == "d":
            if not p.is_dir() or p.is_symlink():
                replaced = p.exists() or p.is_symlink()
                clear(p)
                p.mkdir()
                if replaced:  # over a whiteout or a file of this layer: lower content hidden
                    os.setxattr(p, "trusted.overlay.opaque", b"y")
            continue
        clear(p)
        if s.kind == "f":
            p.write_bytes(s.data)
        else:
            os.symlink(s.target, p)


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(layers=LAYERS)
def test_layer_dirs_path_matches_the_model(
    tmp_path_factory: pytest.TempPathFactory, layers: list[list[Spec]]
) -> None:
    if os.getuid() != 0:
        pytest.skip("overlay whiteouts are device nodes and opaque marks trusted xattrs")
    expected = predict(layers)
    assume(expected is not None)
    base = tmp_path_factory.mktemp("dirs")
    dirs: list[str] = []
    for i, layer in enumerate(layers):
        try:
            _layer_dir(base / f"l{i}", layer)
        except ValueError:
            assume(False)  # not representable as a layer dir (tar layers refuse it too)
        dirs.insert(0, str(base / f"l{i}"))
    staging = base / "staging"
    staging.mkdir()
    overlay.apply_merged(dirs, [f"layer{i}" for i in range(len(layers))], Writer(staging))
    assert observe(staging) == expected
