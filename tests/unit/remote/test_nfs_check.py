"""The exports/ganesha.conf checker the server runs before a file is applied."""

from __future__ import annotations

from pathlib import Path

from netroot.remote.nfs_check import BEGIN, END, check_exports, check_ganesha, main


def _block(text: str) -> str:
    return f"# mine\n/srv/x 192.0.2.1(rw)\n{BEGIN}\n{text}\n{END}\n"


def test_policy_is_enforced_only_inside_the_netroot_block() -> None:
    assert check_exports("/srv/any *(rw,sync)\n") == []  # the administrator's business
    assert check_exports(_block("/srv/a 10.0.0.1(ro,no_root_squash,fsid=1)")) == []
    problems = check_exports(_block("/srv/a *(ro,fsid=1)"))
    assert [p.line for p in problems] == [4] and "not one address" in problems[0].message
    assert "read-only" in str(check_exports(_block("/srv/a 10.0.0.1(rw,fsid=1)")))
    assert "fixed fsid" in str(check_exports(_block("/srv/a 10.0.0.1(ro)")))
    assert "10.0.0.0/24" in str(check_exports(_block("/srv/a 10.0.0.0/24(ro,fsid=1)")))


def test_exports_syntax_problems_anywhere() -> None:
    assert "not absolute" in str(check_exports("srv 10.0.0.1(ro)\n"))
    assert "unknown export option" in str(check_exports("/srv 10.0.0.1(ro,frobnicate)\n"))
    assert "already exported" in str(check_exports("/srv a(ro)\n/srv b(ro)\n"))
    assert "fsid" in str(check_exports("/srv a(ro,fsid=x y)\n/t a(fsid=nope)\n"))
    assert check_exports('"/srv/with space"\t10.0.0.1(ro) \\\n  10.0.0.2(ro)\n') == []
    assert "without END" in str(check_exports(f"{BEGIN}\n/srv a(ro,fsid=1)\n"))


GANESHA_OK = """
NFSv4 { Graceless = true; }
EXPORT {
    Export_Id = 10; Path = "/srv/a"; Pseudo = "/srv/a"; Access_Type = None;
    FSAL { Name = VFS; }
    CLIENT { Clients = 10.0.0.1, 10.0.0.2; Access_Type = RO; }
}
"""


def test_ganesha_config_checks() -> None:
    assert check_ganesha(GANESHA_OK) == []
    assert check_ganesha(f"{BEGIN}\n{GANESHA_OK}\n{END}\n") == []
    assert "never closed" in str(check_ganesha("EXPORT {\n Export_Id = 1;\n"))
    assert "must end with ';'" in str(check_ganesha('EXPORT { Path = "/a" }'))
    twice = GANESHA_OK + GANESHA_OK.replace('"/srv/a"', '"/srv/b"')
    assert "also on line" in str(check_ganesha(twice))
    assert "FSAL" in str(check_ganesha('EXPORT { Export_Id = 2; Path = "/a"; }'))
    star = GANESHA_OK.replace("10.0.0.1, 10.0.0.2", "*")
    assert check_ganesha(star) == []  # outside netroot's block: allowed
    assert "single addresses" in str(check_ganesha(f"{BEGIN}\n{star}\n{END}\n"))
    rw = GANESHA_OK.replace("Access_Type = RO", "Access_Type = RW")
    assert "read-only" in str(check_ganesha(f"{BEGIN}\n{rw}\n{END}\n"))


def test_command_line(tmp_path: Path) -> None:
    good, bad = tmp_path / "good", tmp_path / "bad"
    good.write_text(GANESHA_OK)
    bad.write_text("EXPORT {")
    assert main(["ganesha", str(good)]) == 0
    assert main(["ganesha", str(bad)]) == 1
    assert main(["nope", str(good)]) == 2
    assert main(["ganesha", str(tmp_path / "missing")]) == 2
