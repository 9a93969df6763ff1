"""Regular expressions from untrusted packs, in linear time (RE2, via google-re2).

A pack's `placeholder_patterns` run on every cell of every artifact; with Python's
backtracking engine a pattern such as `^(a+)+$` takes exponential time on a long cell and
hangs the value gate (issue 17, item 7). RE2 guarantees time linear in the input. It does not
support backreferences or lookaround; such a pattern is refused when the pack loads, with
the reason.
"""

from __future__ import annotations

from typing import Any, Protocol

import re2

__all__ = ["SafePattern", "compile_safe"]


class SafePattern(Protocol):
    def search(self, text: str) -> Any: ...


def compile_safe(pattern: str) -> SafePattern:
    """The pattern compiled by RE2, or ValueError saying why it cannot be."""
    options = re2.Options()
    options.log_errors = False  # the error comes back in the exception, not on stderr
    try:
        compiled: SafePattern = re2.compile(pattern, options)
    except re2.error as exc:
        reason = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise ValueError(
            f"{pattern!r} is not a pattern RE2 runs in linear time: {reason} "
            "(backreferences and lookaround are not supported)"
        ) from exc
    return compiled
