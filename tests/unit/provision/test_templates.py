"""Golden files of every rendered template, and StrictUndefined errors that name the place.

Regenerate the golden files after an intended template change with
`NETROOT_UPDATE_GOLDEN=1 .venv/bin/pytest tests/unit/test_provision_templates.py` and review
the diff like code.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from netroot.inventory import load
from netroot.paths import project_file
from netroot.remote.nfs_check import BEGIN, END, check_exports, check_ganesha
from netroot.templating import BOARD_ROLE, Renderer, TemplateProblem

HERE = Path(__file__).parents[1]  # tests/unit: its golden/ and fixtures/
GOLDEN = HERE / "golden"
INVENTORY = HERE / "fixtures" / "provision_inventory.yml"
TEMPLATES = project_file("templates")


def _renderer() -> Renderer:
    return Renderer(load(INVENTORY))


def _cases() -> list[tuple[str, str, str | None]]:
    # (host, kind, version): every template is rendered by at least one case.
    return [
        ("nfs-01", "server", None),
        ("nfs-kernel", "server", None),
        ("pi-01", "board", None),
        ("pi-02", "board", "fedcba9876543210"),
        ("pi-03", "board", "0123456789abcdef"),
        ("pi-04", "board", "fedcba9876543210"),
    ]


def _render_all() -> dict[str, str]:
    renderer = _renderer()
    files: dict[str, str] = {}
    for host, kind, version in _cases():
        rendered = (
            renderer.render_server(host)
            if kind == "server"
            else renderer.render_board(host, version)
        )
        for r in rendered:
            files[f"{host}__{r.template.removesuffix('.j2')}"] = r.text
    return files


def test_rendered_templates_match_the_golden_files() -> None:
    files = _render_all()
    if os.environ.get("NETROOT_UPDATE_GOLDEN"):
        for old in GOLDEN.glob("*__*"):
            old.unlink()
        for name, text in files.items():
            (GOLDEN / name).write_text(text)
    expected = {p.name: p.read_text() for p in GOLDEN.glob("*__*")}
    assert sorted(files) == sorted(expected)
    for name, text in files.items():
        assert text == expected[name], f"{name} differs from tests/unit/golden/{name}"


def test_every_template_has_a_golden_file() -> None:
    rendered = {name.split("__", 1)[1] for name in _render_all()}
    # _board.j2, _exports.json.j2 and _netboot_boards.json.j2 are imported/consumed by the
    # others, never written alone.
    written = {
        p.name.removesuffix(".j2")
        for p in TEMPLATES.glob("*.j2")
        if p.name not in ("_board.j2", "_exports.json.j2", "_netboot_boards.json.j2")
    }
    assert written == rendered


def test_rendered_exports_pass_the_servers_checker() -> None:
    files = _render_all()
    assert check_exports(f"{BEGIN}\n{files['nfs-kernel__exports']}{END}\n") == []
    assert check_ganesha(f"{BEGIN}\n{files['nfs-01__ganesha.conf']}{END}\n") == []


def test_exports_are_read_only_and_only_to_the_boards_of_each_image() -> None:
    exports = {e["image"]: e for e in _renderer().server_exports("nfs-kernel")}
    # pi-04 netboots: its root is the same export, mounted by its kernel (nfsroot=)
    assert exports["raspbian"]["clients"] == ["10.77.0.14"]
    assert exports["other"]["clients"] == ["10.77.0.16"]
    assert exports["raspbian"]["export_id"] == 7  # the inventory's override
    assert exports["raspbian"]["path"] == "/srv/netroot/raspbian"  # trailing / of the root
    # Stable ids: another image does not renumber this one.
    assert _renderer().server_exports("nfs-01")[0]["fsid"] == exports["other"]["fsid"]


def test_each_server_exports_and_netboots_only_its_own_boards() -> None:
    renderer = _renderer()
    ganesha = {e["image"]: e["clients"] for e in renderer.server_exports("nfs-01")}
    assert ganesha == {
        "other": ["10.77.0.13"],
        "raspbian": ["10.77.0.11", "10.77.0.12", "10.77.0.15"],
    }
    assert [b["name"] for b in renderer.netboot_boards("nfs-01")] == ["pi-05"]
    assert [b["name"] for b in renderer.netboot_boards("nfs-kernel")] == ["pi-04"]
    files = _render_all()
    assert "10.77.0.14" not in files["nfs-01__ganesha.conf"]
    assert "10.77.0.11" not in files["nfs-kernel__exports"]
    assert "b8:27:eb:00:00:14" in files["nfs-kernel__dnsmasq.conf"]
    assert "b8:27:eb:00:00:14" not in files["nfs-01__dnsmasq.conf"]
    # A board mounts from its own server.
    assert "10.77.0.3:/srv/netroot/raspbian" in files["pi-04__cmdline.txt"]


def _line_of(template: str, needle: str) -> int:
    lines = (TEMPLATES / template).read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if needle in line)


def test_missing_variable_names_template_line_and_host() -> None:
    renderer = _renderer()
    del renderer._defaults[BOARD_ROLE]["netroot_board_mount_retries"]
    with pytest.raises(TemplateProblem) as info:
        renderer.render_board("pi-02")
    problem = info.value
    assert (problem.template, problem.host) == ("netroot-mount.j2", "pi-02")
    assert problem.line == _line_of("netroot-mount.j2", "RETRIES={{")
    assert "netroot_board_mount_retries" in problem.message
    assert problem.message.startswith(f"template netroot-mount.j2:{problem.line} for host pi-02")


def test_missing_variable_in_an_imported_template_names_that_template() -> None:
    renderer = _renderer()
    del renderer._defaults[BOARD_ROLE]["netroot_board_nfs_version"]
    with pytest.raises(TemplateProblem) as info:
        renderer.render_board("pi-01")
    assert info.value.template == "_board.j2"
    assert info.value.line == _line_of("_board.j2", "set nfs_version")
    assert info.value.host == "pi-01"


def test_inventory_override_wins_over_role_default() -> None:
    text = dict(_render_all())["pi-03__netroot-mount"]
    assert "OPTIONS=vers=4.1,proto=tcp,hard,timeo=600,retrans=2" in text
    # once for the export's mount, once for the version's (which adds the profile after it)
    assert text.count(",noatime,nconnect=2,ro") == 2
    v3 = dict(_render_all())["pi-02__netroot-mount"]
    assert "vers=3," in v3 and ",nolock," in v3 and "LAYER=tmpfs" in v3


def test_every_file_the_board_script_puts_carries_the_digest_of_what_it_writes() -> None:
    # The apply script skips a file whose sha256 and mode the board already has: the digest it
    # is given must be the one of the bytes it would write, else a changed file is never written.
    import base64
    import hashlib
    import shlex

    scripts = [
        r.text
        for host, kind, version in _cases()
        if kind == "board"
        for r in _renderer().render_board(host, version)
        if r.template == "_board_apply.sh.j2"
    ]
    assert len(scripts) == 3  # the sd boards' (a netboot board has none)
    for script in scripts:
        lines = [
            line.strip().removeprefix('[ "$PREPARE" = 1 ] || ') for line in script.splitlines()
        ]
        puts = [shlex.split(line) for line in lines if line.startswith("put ")]
        assert len(puts) == 5
        managed = script.split("sha256sum ", 1)[1].split(" 2>", 1)[0].split()
        for words in puts:
            _, path, mode, data, digest = words[:5]
            assert hashlib.sha256(base64.b64decode(data)).hexdigest() == digest, path
            assert mode in ("644", "755") and path in managed, path


def _option_line(text: str, name: str) -> list[str]:
    return (
        next(line for line in text.splitlines() if line.startswith(f"{name}="))
        .split("=", 1)[1]
        .split(",")
    )


def test_only_the_version_mount_gets_the_immutable_profile() -> None:
    files = _render_all()
    profile = ["nocto", "actimeo=86400", "lookupcache=all"]
    for board in ("pi-01", "pi-02", "pi-03"):  # v4.1, v3, options overridden
        text = files[f"{board}__netroot-mount"]
        export, version = _option_line(text, "OPTIONS"), _option_line(text, "VERSION_OPTIONS")
        assert version == export + profile, board
        assert "nocto" not in export and not any(o.startswith("ac") for o in export), board
        # the version's own mount, over the export's versions/<id>, before the overlay uses it
        assert 'nfs_mount "$EXPORT/versions/$version" "$lower" "$VERSION_OPTIONS"' in text
    cmdline = files["pi-04__cmdline.txt"]
    nfsroot = next(w for w in cmdline.split() if w.startswith("nfsroot="))
    assert nfsroot.split(",")[1:] == [
        *["vers=3", "tcp", "nolock", "hard", "timeo=600", "retrans=2"],
        *profile,
    ]


def test_an_empty_profile_mounts_the_version_as_the_export() -> None:
    renderer = Renderer(load(INVENTORY), extra_vars={"netroot_board_nfs_version_profile": ""})
    for board, version in (("pi-01", None), ("pi-04", "fedcba9876543210")):
        texts = {r.template: r.text for r in renderer.render_board(board, version)}
        if "netroot-mount.j2" in texts:
            text = texts["netroot-mount.j2"]
            assert _option_line(text, "VERSION_OPTIONS") == _option_line(text, "OPTIONS")
        else:
            assert "nocto" not in texts["cmdline.txt.j2"]
            assert ",retrans=2 ro " in texts["cmdline.txt.j2"]
