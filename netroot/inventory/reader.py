"""An inventory read by Ansible's own code, so that netroot and Ansible agree on every variable.

What is read, as `ansible-playbook` reads it when netroot runs a playbook:
- the inventory: a file or a directory, through the inventory plugins Ansible has enabled
  (YAML, INI, ...), then group_vars/ and host_vars/ beside it (Ansible's vars plugins);
- group_vars/ and host_vars/ beside the playbook: netroot runs its playbooks from its
  playbooks/ directory (adapters/ansible.py: ansible-runner's project_dir), so that is the
  loader's base directory, as `ansible-inventory --playbook-dir playbooks/` would have it;
- every precedence rule Ansible has: VariableManager merges what `ansible-inventory --host`
  shows (no play, so no role defaults, play vars or extra vars);
- vault-encrypted values, with the secrets Ansible finds itself: ANSIBLE_VAULT_PASSWORD_FILE
  or ANSIBLE_VAULT_IDENTITY_LIST, else vault_password_file / vault_identity_list of the
  ansible.cfg Ansible reads. Never a prompt: netroot runs from scripts and CI. (netroot's
  playbook runs point ANSIBLE_CONFIG at playbooks/ansible.cfg, so a user's ansible.cfg does
  not reach them: Inventory.vault_password_files names the files that decrypted this read.)

Templated values ("{{ ... }}") are rendered with Ansible's Templar, with the host's variables,
`hostvars` and `groups`. `ansible-inventory --host` shows them as written, but netroot needs the
real values (a board's address is what its NFS export is limited to), so a value here is what
`ansible HOST -m debug -a var=NAME` prints (tests/unit/inventory compares with both: the
written value where it is plain, the rendered one where it is a template or a vault). A
template that cannot be rendered without a play (a fact, an undefined name) is an error for
netroot_* and connection (ansible_*) variables, which netroot uses; any other variable keeps
its text (a playbook fails on it only if a task uses it). A vault value that cannot be
decrypted is always an error.

Stricter than Ansible where it only warns and goes on: a file that no inventory plugin can
parse, or a binary one (Ansible's INI plugin takes its bytes for host names), is an error
(Ansible would run without its hosts). Warnings, each naming a file and
line: a key written twice (Ansible's own warning), a host's variable set in two places (Ansible
keeps the last), a netroot_* variable that netroot does not know (variables.py).

Cost: importing ansible-core takes about half a second, so it is imported here, in `read`,
never at netroot's import (`netroot --help` stays instant); bench/bench_inventory.py measures
a 100-board inventory against the loader this one replaced.
"""

from __future__ import annotations

import difflib
import os
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from netroot.errors import EnvironmentMissing
from netroot.inventory.model import Host, InventoryError
from netroot.inventory.variables import BY_NAME, INVENTORY_SCOPES

CONNECTION_PREFIX = "ansible_"
# Ansible's warnings that netroot's own errors already say better.
QUIET = ("No inventory was parsed", "Unable to parse ")


@dataclass(frozen=True)
class Read:
    hosts: dict[str, Host]
    groups: dict[str, frozenset[str]]
    warnings: tuple[str, ...]
    vault_password_files: tuple[str, ...]


def read(path: Path, playbook_dir: Path) -> Read:
    """The hosts, groups and merged variables of the inventory at `path`, as Ansible has them."""
    with warnings.catch_warnings():
        # ansible-core's import warns about cryptography's DSA on stderr: not netroot's to say.
        warnings.simplefilter("ignore")
        try:
            # Everything _read needs, imported while the warning above is silenced.
            import ansible.cli
            import ansible.inventory.manager
            import ansible.template
            import ansible.vars.manager  # noqa: F401
            from ansible._internal._display_utils import DeferredWarningContext
            from ansible.errors import AnsibleError
        except ImportError:
            raise EnvironmentMissing(
                "netroot reads inventories with ansible-core 2.19 or later",
                "pip install 'ansible-core>=2.19'",
            ) from None
    notes: list[str] = []
    loader = _loader()
    try:
        with DeferredWarningContext(variables={}) as captured:
            found = _read(path, playbook_dir, loader, captured, notes)
    except AnsibleError as exc:
        # A vars file that fails (a vault without its password) is named by Ansible nowhere.
        where = loader.failed or path
        raise InventoryError(f"{where}: {_one_line(exc)}", _hint(exc)) from None
    except (UnicodeDecodeError, OSError) as exc:
        raise InventoryError(f"{path}: cannot read it: {_one_line(exc)}") from None
    return found


def _loader() -> Any:
    """Ansible's DataLoader, remembering the file it failed to load."""
    from ansible.parsing.dataloader import DataLoader

    class Loader(DataLoader):  # type: ignore[misc]
        failed: str | None = None

        def load_from_file(self, file_name: str, *args: Any, **kwargs: Any) -> Any:
            try:
                loaded = super().load_from_file(file_name, *args, **kwargs)
            except Exception:
                self.failed = file_name
                raise
            self.failed = None  # a plugin that declined a file is not what failed later
            return loaded

    return Loader()


def _read(path: Path, playbook_dir: Path, loader: Any, captured: Any, notes: list[str]) -> Read:
    from ansible import constants as C
    from ansible.cli import CLI
    from ansible.parsing.vault import VaultSecretsContext
    from ansible.vars.hostvars import HostVars
    from ansible.vars.manager import VariableManager

    loader.set_basedir(str(playbook_dir))
    # Asked of Ansible's configuration now, not read from its constants (set once, when ansible
    # is first imported), so that the environment of this call counts.
    password_file = C.config.get_config_value("DEFAULT_VAULT_PASSWORD_FILE")
    files = [str(password_file)] if password_file else []
    secrets = CLI.setup_vault_secrets(
        loader,
        vault_ids=list(C.config.get_config_value("DEFAULT_VAULT_IDENTITY_LIST") or []),
        vault_password_files=list(files),
        auto_prompt=False,
        initialize_context=False,  # once per process only; set below for this read alone
    )
    # Vault values decrypt through this process-wide context; it is set for this read only
    # (every value leaves here decrypted), so that several inventories can be read in turn.
    previous = VaultSecretsContext._current
    VaultSecretsContext._current = VaultSecretsContext(secrets)
    try:
        manager = _parse(path, loader, captured, notes)
        variables = VariableManager(loader=loader, inventory=manager)
        HostVars(inventory=manager, variable_manager=variables, loader=loader)
        hosts: dict[str, Host] = {}
        for name, h in manager.hosts.items():
            everything = variables.get_vars(host=h, stage="all")
            values, origins = _host_vars(path, name, everything, loader, C)
            hosts[name] = Host(name, values, frozenset(g.name for g in h.get_groups()), origins)
    finally:
        VaultSecretsContext._current = previous
    if not hosts:
        said = _forwarded(captured)  # why, when Ansible said (a key it skipped, ...)
        raise InventoryError(
            f"{path}: no hosts in it" + (f" ({said[0]})" if said else ""),
            "an inventory names its hosts (YAML: all: children: GROUP: hosts: NAME:)",
        )
    notes.extend(_forwarded(captured))
    notes.extend(_unknown(hosts))
    members = {g: frozenset(names) for g, names in manager.get_groups_dict().items()}
    return Read(hosts, members, tuple(dict.fromkeys(notes)), tuple(files))


def _parse(path: Path, loader: Any, captured: Any, notes: list[str]) -> Any:
    """Ansible's InventoryManager on `path`, failing where Ansible would only warn, and noting
    each host variable set twice."""
    from ansible.inventory.manager import InventoryManager

    class Manager(InventoryManager):  # type: ignore[misc]
        def parse_source(self, source: str, cache: bool = False) -> bool:
            _text_or_script(source)
            before = len(captured.get_warnings())
            parsed = bool(super().parse_source(source, cache=cache))
            if not parsed and not os.path.isdir(source):
                raise InventoryError(
                    f"{source}: " + _failure(source, captured.get_warnings()[before:]),
                    "an inventory is YAML (all: hosts/children/vars) or INI ([group] lines)",
                )
            return parsed

    manager = Manager(loader, sources=[str(path)], parse=False)
    data = manager._inventory
    data.set_variable = _noting_twice(data, data.set_variable, notes)
    manager.parse_sources(cache=False)
    return manager


def _text_or_script(source: str) -> None:
    """Ansible's INI plugin reads a binary file's bytes as host names (a deprecation warning
    only): a file of an inventory must be UTF-8 text, unless it is an inventory script."""
    if os.path.isdir(source) or not os.path.isfile(source) or os.access(source, os.X_OK):
        return
    with open(source, "rb") as f:
        data = f.read()
    try:
        if b"\0" in data:
            raise UnicodeDecodeError("utf-8", data, data.index(b"\0"), len(data), "a NUL byte")
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InventoryError(
            f"{source}: not an inventory: binary or not UTF-8 (byte {exc.start})",
            "an inventory is text: YAML or INI (or an executable inventory script)",
        ) from None


def _noting_twice(
    data: Any, set_variable: Callable[[str, str, Any], None], notes: list[str]
) -> Callable[[str, str, Any], None]:
    """set_variable that notes a host's variable given twice with two values (a host written
    twice): Ansible silently keeps the last."""
    seen: dict[tuple[str, str], tuple[Any, str]] = {}

    def noted(entity: str, varname: str, value: Any) -> None:
        if entity not in data.groups:  # InventoryData looks groups up first too
            where = _where(varname) or _where(value) or "?"
            before = seen.get((entity, varname))
            if before is not None and before[1] != where and before[0] != value:
                notes.append(
                    f"{where}: host {entity}: {varname} is also set at {before[1]} "
                    f"({before[0]!r}); Ansible uses this one ({value!r})"
                )
            seen[(entity, varname)] = (value, where)
        set_variable(entity, varname, value)

    return noted


def _host_vars(
    path: Path, host: str, everything: Mapping[str, Any], loader: Any, C: Any
) -> tuple[dict[str, Any], dict[str, str]]:
    """The variables `ansible-inventory --host` shows, each rendered and decrypted, and where
    each is written (when Ansible knows)."""
    from ansible.errors import AnsibleError
    from ansible.parsing.vault import AnsibleVaultError, EncryptedString
    from ansible.template import Templar

    templar = Templar(loader=loader, variables=everything)
    out: dict[str, Any] = {}
    origins: dict[str, str] = {}
    for key, value in everything.items():
        if key in C.INTERNAL_STATIC_VARS:
            continue
        where = _where(key) or _where(value)
        if where:
            origins[str(key)] = where
        try:
            out[str(key)] = _plain(templar.template(value))
        except AnsibleError as exc:
            vault = isinstance(exc, AnsibleVaultError) or isinstance(value, EncryptedString)
            if vault or key.startswith(("netroot_", CONNECTION_PREFIX)):
                where = _where(value) or _where(key) or str(path)
                what = "cannot decrypt it" if vault else "Ansible cannot render it"
                raise InventoryError(
                    f"{where}: host {host}: {key}: {what}: {_one_line(exc)}",
                    _hint(exc) if vault else "render it without facts or play variables",
                ) from None
            out[str(key)] = _plain(value)
    return out, origins


def _plain(value: Any) -> Any:
    """Ansible's tagged values as plain Python ones (netroot hands them to JSON, jinja2, SSH)."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, str):
        return str(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, Mapping):
        return {_plain(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_plain(v) for v in value]
    return value


def _where(value: Any) -> str | None:
    """file:line of a value or key Ansible read, when it knows."""
    from ansible._internal._datatag._tags import Origin

    origin = Origin.get_tag(value)
    if origin is None or not origin.path:
        return None
    return f"{origin.path}:{origin.line_num}" if origin.line_num else str(origin.path)


def _unknown(hosts: Mapping[str, Host]) -> list[str]:
    """A warning for each netroot_* variable that is no inventory variable (misspelt, or
    one netroot sets at run time), once per place it is written."""
    names = [n for n, v in BY_NAME.items() if v.scope in INVENTORY_SCOPES]
    out: list[str] = []
    for host in hosts.values():
        for key in host.vars:
            if not key.startswith("netroot_") or key in names:
                continue
            where = host.origins.get(key, f"host {host.name}")
            known = BY_NAME.get(key)
            if known is not None:
                why = f"is set by netroot at run time ({known.meaning}); this value is overridden"
            else:
                close = difflib.get_close_matches(key, names, n=1)
                why = "is not a netroot variable: ignored" + (
                    f" (did you mean {close[0]}?)" if close else ""
                )
            out.append(f"{where}: {key} {why}")
    return out


def _forwarded(captured: Any) -> list[str]:
    """Ansible's own warnings (a key written twice, ...), one line each."""
    out = []
    for summary in captured.get_warnings():
        event = summary.event
        if str(event.msg).startswith(QUIET):
            continue
        context = (event.formatted_source_context or "").splitlines()
        origin = context[0].removeprefix("Origin: ") if context else ""
        out.append(f"{_strip_column(origin)}: {event.msg}" if origin else str(event.msg))
    return out


def _strip_column(origin: str) -> str:
    head, _, tail = origin.rpartition(":")
    return head if tail.isdigit() and head.rpartition(":")[2].isdigit() else origin


def _failure(source: str, found: list[Any]) -> str:
    """Why no plugin parsed `source`: the reason given by the plugin meant for its kind of file
    (its deepest one-line message, and the file and line when Ansible names them)."""
    wanted = "yaml" if source.endswith((".yml", ".yaml", ".json")) else "ini"
    reasons: dict[str, str] = {}
    for summary in found:
        event = summary.event
        plugin = str(event.msg).partition("'")[2].partition("'")[0]
        reason, origin = "", ""
        while event is not None:
            msg = str(event.msg)
            if "\n" not in msg and msg != "Failed to parse inventory.":
                reason = msg
            context = (event.formatted_source_context or "").splitlines()
            if context and not context[0].startswith("Origin: <"):
                origin = _strip_column(context[0].removeprefix("Origin: "))
            event = event.chain.event if event.chain is not None else None
        if plugin and reason:
            reasons[plugin] = reason + (f" ({origin})" if origin and origin != source else "")
    kind = "YAML" if wanted == "yaml" else "INI"
    why = reasons.get(wanted) or next(iter(reasons.values()), "no inventory plugin accepts it")
    return f"not a{'n' if kind == 'INI' else ''} {kind} inventory Ansible can read: {why}"


def _one_line(exc: BaseException) -> str:
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    return lines[0] if lines else type(exc).__name__


def _hint(exc: BaseException) -> str:
    from ansible.parsing.vault import AnsibleVaultError

    if isinstance(exc, AnsibleVaultError) or "vault" in str(exc).lower():
        return (
            "give Ansible the vault password: ANSIBLE_VAULT_PASSWORD_FILE=FILE, or "
            "vault_password_file in ansible.cfg"
        )
    return "check it with: ansible-inventory -i INVENTORY --list"
