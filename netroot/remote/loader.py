"""Register bundled modules, given as (dotted name, source), under their real names.

The one loader of what netroot sends as source to run away from the control host (netroot.bundle
builds every such program): a program opens with this file's text, so that it can load the
rest. The QPU program also carries it as a module: it loads the torch modules with it once S12
has seen torch import (netroot.qpu.torch_smoke). Standard library only: it runs before anything
else is loaded.
"""

from __future__ import annotations

import sys
import types


def _package(name: str) -> None:
    """An empty package `name` (and its parents) where none is loaded yet."""
    if not name or name in sys.modules:
        return
    parent, _, short = name.rpartition(".")
    _package(parent)
    module = types.ModuleType(name)
    module.__path__ = []
    sys.modules[name] = module
    if parent:
        setattr(sys.modules[parent], short, module)


def load_bundled(sources: list[tuple[str, str]]) -> None:
    """Execute each source as module `name`, in order (each imports only those before it)."""
    for name, source in sources:
        parent, _, short = name.rpartition(".")
        _package(parent)
        module = types.ModuleType(name)
        module.__file__ = "<netroot-bundle:" + name + ">"
        sys.modules[name] = module
        exec(compile(source, module.__file__, "exec"), module.__dict__)
        setattr(sys.modules[parent], short, module)
