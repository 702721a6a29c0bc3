"""A testinfra backend for the host-worker tests: commands run on this machine, for real, under
any host name (testinfra's own `local://` backend knows one host only). Not a test module."""

from __future__ import annotations

from typing import Any

import testinfra.backend
from testinfra.backend import base


class NamedLocalBackend(base.BaseBackend):  # type: ignore[misc]
    NAME = "named"

    def run(self, command: str, *args: str, **kwargs: Any) -> base.CommandResult:
        return self.run_local(self.get_command(command, *args))

    def get_pytest_id(self) -> str:
        return str(self.hostname)


testinfra.backend.BACKENDS.setdefault("named", f"{__name__}.NamedLocalBackend")
