"""What an export is asked: the source (what it is, and how to write it) and the options,
declared once for this host, one server and several."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from netroot.export.sources import SourceInfo, SourceRead
from netroot.export.writer import Progress, Writer


class Source(NamedTuple):
    """A source to export: what it is (identified without writing anything) and the function
    that writes its members into a Writer, saying how it read them."""

    info: SourceInfo
    write: Callable[[Writer], SourceRead]


@dataclass(frozen=True)
class ExportOptions:
    """An export's options, the same wherever the version goes."""

    switch: bool = True  # move `current` to the version (a rollout moves it only once green)
    keep: int | None = None  # then prune to this many versions (None: no prune)
    keep_host_keys: bool = False  # keep the image's SSH host keys (default: removed)
    protected: frozenset[str] = frozenset()  # versions a prune never removes
    progress: Progress | None = None

    @property
    def request(self) -> dict[str, Any]:
        """What a server's export helper is asked once the version is there (JSON)."""
        return {"switch": self.switch, "keep": self.keep, "protected": sorted(self.protected)}
