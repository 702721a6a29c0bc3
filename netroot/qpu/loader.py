"""Register bundled modules, given as (dotted name, source), under their real names.

The one loader of what netroot sends to a board as source: a bundle (netroot.qpu.bundle) opens
with this file's text, so that it can load the rest, and carries it as a module too; the smoke
program loads the torch modules with it once S12 has seen torch import (netroot.qpu.torch_smoke).
Standard library only: it runs before anything else is loaded.
"""

from __future__ import annotations

import sys
import types


def load_bundled(sources: list[tuple[str, str]]) -> None:
    """Execute each source as module `name`, in order (each imports only those before it)."""
    for package in ("netroot", "netroot.qpu"):
        if package not in sys.modules:
            module = types.ModuleType(package)
            module.__path__ = []
            sys.modules[package] = module
    for name, source in sources:
        module = types.ModuleType(name)
        module.__file__ = "<netroot-bundle:" + name + ">"
        sys.modules[name] = module
        exec(compile(source, module.__file__, "exec"), module.__dict__)
        parent, _, short = name.rpartition(".")
        setattr(sys.modules[parent], short, module)
