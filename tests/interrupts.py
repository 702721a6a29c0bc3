"""Ctrl-C as at a terminal, for the tests that interrupt a netroot they started.

The suite may itself run with SIGINT ignored (under nohup, or as a script's background job:
a shell without job control starts those with SIGINT and SIGQUIT ignored). A child inherits
that, and Python then installs no KeyboardInterrupt handler: the netroot under test would
rightly ignore the test's SIGINT, as any Unix program started so does. Its Popen takes
`preexec_fn=sigint_as_at_a_terminal`.
"""

from __future__ import annotations

import signal


def sigint_as_at_a_terminal() -> None:
    """In the child, before exec: SIGINT's default action, as a terminal's foreground job has."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
