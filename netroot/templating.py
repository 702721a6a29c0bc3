"""Render the roles' templates in Python, exactly as the roles will, before any host is touched.

The variables a template sees are rebuilt from the inventory the way Ansible builds them: the
role's defaults, then the inventory's group and host vars, then extra vars, plus `groups`,
`hostvars` and `inventory_hostname`. Templates use StrictUndefined, so a missing or misspelled
variable is an error that names the template, its line and the inventory host (pure module).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shlex
import types
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2
import yaml

from netroot import bootmode, nfskind
from netroot.errors import UsageError
from netroot.inventory import Inventory
from netroot.paths import project_file

# ansible.builtin.to_uuid's namespace: the same input gives the same UUID in both renderers.
ANSIBLE_UUID_NAMESPACE = uuid.UUID("361E6D51-FAEC-444A-9079-341386DA8E2E")
SERVER_ROLE = "netroot_nfs_server"
BOARD_ROLE = "netroot_board"

# What the server role adds when a board netboots (tasks/netboot.yml).
DNSMASQ_TEMPLATES = ("dnsmasq.conf.j2", "netroot-dnsmasq.j2")


class TemplateProblem(UsageError):
    """A template could not be rendered for a host: names template, line and host."""

    def __init__(self, template: str, line: int | None, host: str, why: str) -> None:
        where = f"{template}:{line}" if line else template
        super().__init__(
            f"template {where} for host {host}: {why}",
            f"set the variable in the inventory for {host} (or its group), or fix the template",
        )
        self.template = template
        self.line = line
        self.host = host
        self.why = why


def to_uuid(value: str, namespace: str | uuid.UUID = ANSIBLE_UUID_NAMESPACE) -> str:
    """ansible.builtin.to_uuid: a name-based (v5) UUID."""
    ns = namespace if isinstance(namespace, uuid.UUID) else uuid.UUID(namespace)
    return str(uuid.uuid5(ns, str(value)))


def _to_bool(value: Any) -> bool:
    """ansible.builtin.bool: yes/no/true/false/1/0 strings as booleans."""
    if isinstance(value, str):
        return value.strip().lower() in ("yes", "on", "1", "true", "y")
    return bool(value)


def environment(templates_dir: Path | None = None) -> jinja2.Environment:
    """A Jinja environment with Ansible's template settings and the filters the templates use."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir or project_file("templates"))),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,  # ansible.builtin.template's default
        keep_trailing_newline=True,
        autoescape=False,
    )
    env.filters["to_uuid"] = to_uuid
    env.filters["quote"] = lambda s: shlex.quote(str(s))
    env.filters["basename"] = lambda s: Path(str(s)).name
    env.filters["b64encode"] = lambda s: base64.b64encode(str(s).encode()).decode()
    env.filters["bool"] = _to_bool
    # ansible.builtin.hash: the hex digest of the string's UTF-8 bytes
    env.filters["hash"] = lambda s, kind="sha1": hashlib.new(kind, str(s).encode()).hexdigest()
    return env


def role_defaults(role: str) -> dict[str, Any]:
    """A role's defaults/main.yml."""
    path = project_file("playbooks", "roles", role, "defaults", "main.yml")
    data = yaml.safe_load(path.read_text()) or {}
    if not isinstance(data, dict):
        raise UsageError(f"{path}: defaults must be a mapping")
    return data


@dataclass(frozen=True)
class Rendered:
    host: str
    template: str
    text: str


def _frozen(vars_: Mapping[str, Any]) -> Mapping[str, Any]:
    return types.MappingProxyType(dict(vars_))


class Renderer:
    """Renders templates for inventory hosts with Ansible's variable precedence."""

    def __init__(
        self,
        inventory: Inventory,
        extra_vars: Mapping[str, Any] | None = None,
        templates_dir: Path | None = None,
    ) -> None:
        self.inventory = inventory
        self.extra_vars = dict(extra_vars or {})
        self.env = environment(templates_dir)
        self._defaults = {
            SERVER_ROLE: role_defaults(SERVER_ROLE),
            BOARD_ROLE: role_defaults(BOARD_ROLE),
        }
        # hostvars of *other* hosts hold inventory vars (and extra vars), not role defaults.
        self.hostvars = {
            name: _frozen({**host.vars, **self.extra_vars, "inventory_hostname": name})
            for name, host in inventory.hosts.items()
        }
        self.groups = {g: sorted(m) for g, m in inventory.groups.items()}

    def variables(
        self, host: str, role: str, facts: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """What a template task of `role` on `host` sees."""
        variables = {
            **self._defaults[role],
            **self.inventory.hosts[host].vars,
            **(facts or {}),
            **self.extra_vars,
            "inventory_hostname": host,
            "groups": self.groups,
            "hostvars": self.hostvars,
        }
        # Defaults that are expressions of inventory vars (netroot_board_qpu_boot_config:
        # "{{ netroot_qpu_boot_config | default(netroot_qpu ...) }}") are evaluated lazily by
        # Ansible; here once, unless a higher layer set the variable itself.
        for name, value in self._defaults[role].items():
            if isinstance(value, str) and "{{" in value and variables[name] is value:
                variables[name] = self.render_string(value, host, variables)
        return variables

    def render_string(self, text: str, host: str, variables: Mapping[str, Any]) -> Any:
        """One templated value (a role default), errors named like a template's.

        A value that is one `{{ expression }}` keeps its type (a dict stays a dict), as Ansible
        gives it; anything else renders to a string.
        """
        whole = re.fullmatch(r"\s*\{\{(.*)\}\}\s*", text, re.DOTALL)
        try:
            if whole and "{{" not in whole.group(1):
                return self.env.compile_expression(whole.group(1))(**variables)
            return self.env.from_string(text).render(**variables)
        except Exception as exc:
            raise TemplateProblem("defaults/main.yml", None, host, str(exc)) from None

    def render(self, template: str, host: str, variables: Mapping[str, Any]) -> str:
        """Render one template; any error becomes a TemplateProblem naming template, line, host."""
        try:
            return self.env.get_template(template).render(**variables)
        except jinja2.TemplateSyntaxError as exc:
            raise TemplateProblem(
                exc.name or template, exc.lineno, host, exc.message or ""
            ) from None
        except jinja2.TemplateNotFound as exc:
            raise TemplateProblem(template, None, host, f"no template {exc.name}") from None
        except Exception as exc:  # UndefinedError, TypeError, ... raised while rendering
            name, line = _template_frame(exc, template)
            raise TemplateProblem(name, line, host, str(exc)) from None

    def server_exports(self, server: str) -> list[dict[str, Any]]:
        """The export list the server role computes (from _exports.json.j2)."""
        return self._json_list("_exports.json.j2", server)

    def netboot_boards(self, server: str) -> list[dict[str, str]]:
        """The boards dnsmasq answers (from _netboot_boards.json.j2, as the server role)."""
        return self._json_list("_netboot_boards.json.j2", server)

    def _json_list(self, template: str, server: str) -> list[Any]:
        text = self.render(template, server, self.variables(server, SERVER_ROLE))
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise TemplateProblem(template, None, server, f"not JSON: {exc}") from None
        if not isinstance(data, list):
            raise TemplateProblem(template, None, server, "not a JSON list")
        return data

    def render_server(self, server: str) -> list[Rendered]:
        """Every file the server role templates on `server` (dnsmasq's when boards netboot)."""
        facts = {
            "netroot_nfs_server_exports": self.server_exports(server),
            "netroot_nfs_server_dnsmasq_boards": self.netboot_boards(server),
        }
        variables = self.variables(server, SERVER_ROLE, facts)
        # What the server's NFS kind templates (netroot/nfskind.py): its exports first, then
        # the server's state script (run on every play; the rest is written only when needed).
        kind = _nfs_kind(variables)
        templates = kind.templates if kind else ()
        if facts["netroot_nfs_server_dnsmasq_boards"]:
            templates = (*templates, *DNSMASQ_TEMPLATES)
        return [Rendered(server, t, self.render(t, server, variables)) for t in templates]

    def render_board(self, board: str, version: str | None = None) -> list[Rendered]:
        """Every file the board role templates for `board`: its mount and chroot scripts, or
        when it netboots, the cmdline.txt its TFTP directory gets."""
        facts = {"netroot_board_version": version or "<current>"}
        variables = self.variables(board, BOARD_ROLE, facts)
        templates = bootmode.of(
            str(variables.get("netroot_board_boot", bootmode.DEFAULT))
        ).board_templates
        return [Rendered(board, t, self.render(t, board, variables)) for t in templates]


def _nfs_kind(variables: Mapping[str, Any]) -> nfskind.NfsKind | None:
    """The NFS server kind a server's variables name (extra vars win, as in the role); None
    for a name no kind has (the inventory refuses it first)."""
    return nfskind.KINDS.get(str(variables.get("netroot_nfs_backend", nfskind.DEFAULT)))


def _template_frame(exc: BaseException, fallback: str) -> tuple[str, int | None]:
    """The innermost traceback frame that is template code: (template name, line)."""
    name, line = fallback, None
    tb = exc.__traceback__
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if filename.endswith(".j2"):
            name, line = Path(filename).name, tb.tb_lineno
        tb = tb.tb_next
    return name, line
