"""Sentences and the truncation boundary of prose (plain text, possibly with lists/tables).

`truncation_rules` names every sign that the prose stops mid-thought: no terminal
punctuation, a trailing ellipsis or connector word, unbalanced brackets or quotes, a list or
table cut off (an empty last item, a last item without the punctuation the others have, a
table row with fewer cells than the header, a colon that announces what never follows).
A final list whose items consistently go without punctuation, or a complete final table row,
is a proper ending.
"""

from __future__ import annotations

import re
from bisect import bisect_right

__all__ = ["CONNECTORS", "Sentences", "lower", "truncation_rules"]

# a sentence ends after [.!?] (and closing quotes or brackets) and white space, or at a blank
# line; the pattern leads with a character set so that `re` skips to those characters (group 1
# is the end of the sentence, None at a blank line)
_SENTENCE_END = re.compile(r"[.!?\n](?:(?<=[.!?])([\"')\]”’»]*)\s+|(?<=\n)\s*\n)")
_PERIOD_END = re.compile(r"\.([\"')\]”’»]*)\s+")  # the same, in text without "!", "?", "\n"
_TERMINAL = re.compile(r"[.!?][\"')\]”’»]*$")
_TOKEN = re.compile(r"[^\W_]+")
_LIST_ITEM = re.compile(r"^\s*(?:[-*•]|\(?\d{1,3}[.)]|\(?[a-z][.)])(?:\s+(.*))?$")
_EMPTY_MARKER = re.compile(
    r"(?:(?:^|\n)[ \t]*(?:[-*•]|\(?\d{1,3}[.)]|\(?[a-z]\))|[,;:][ \t]*\(?\d{1,3}\))$"
)
CONNECTORS = frozenset({
    "and", "or", "the", "a", "an", "with", "of", "to", "for", "by", "from", "in", "into",
    "but", "nor", "than", "that", "which", "whose", "as", "at", "including", "such", "via",
    "versus", "plus",
})
# Connectors that make even a sentence ending in "." look cut off ("... fitted with.").
_HARD_CONNECTORS = frozenset(
    {"and", "or", "the", "a", "an", "with", "of", "nor", "than", "versus", "plus"}
)
_PAIRS = (("(", ")"), ("[", "]"), ("{", "}"), ("“", "”"))
# a last line "Label: value" is a complete ending ("Next review: Q3", "Standard: NFPA 70")
# (a label of at most four words; a short value that is not itself sentences)
_LABEL_LINE = re.compile(
    r"^\s*(?:[-*•]\s+)?[^\W\d_][\w/()&'-]*(?:[ \t]+[\w/()&'-]+){0,3}:[ \t]+"
    r"(?![^\n]*[.!?;]\s)[^\s:][^\n]{0,60}$"
)
# a period after words that need what follows ("... replaced every.", "... e.g.")
_DANGLING = re.compile(
    r"(?<![\w.])(every|e\.\s?g\.?|i\.\s?e\.?|per|such as|including|like|namely|viz\.?)\s*[.:]$",
    re.IGNORECASE,
)
_LAST_TOKEN = re.compile(r"[^\W_]+(?=[\W_]*$)")
_TAIL_LINES = 200  # lists and tables are judged on the last lines only (bounded work)


_LAST_LOWERED: tuple[str, str] = ("", "")


def lower(text: str) -> str:
    """`text.lower()`, kept for the last text asked: the gate's checks (short forms, clause
    breaks, aggregate cues, injection) each read one prose lower-cased in turn. The pair is
    replaced as one object, so a reader never sees one text with another's lower case."""
    global _LAST_LOWERED  # noqa: PLW0603 - a one-entry memo
    last = _LAST_LOWERED
    if last[0] is text:
        return last[1]
    low = text.lower()
    _LAST_LOWERED = (text, low)
    return low


class Sentences:
    """Sentence spans of a text, and the sentence around a character offset."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.spans: list[tuple[int, int]] = []
        start = 0
        spans = self.spans
        # without "!", "?" or a line break, a sentence ends only after a "." (and `re` skips
        # to those far faster with a literal first than with a character set)
        plain = "\n" not in text and "!" not in text and "?" not in text
        for m in (_PERIOD_END if plain else _SENTENCE_END).finditer(text):
            end = m.end(1)  # -1 at a blank line: the sentence ends where the match starts
            spans.append((start, end if end >= 0 else m.start()))
            start = m.end()
        if start < len(text):
            self.spans.append((start, len(text)))
        self.starts = [s for s, _ in self.spans]

    def index(self, pos: int) -> int:
        return max(0, bisect_right(self.starts, pos) - 1)

    def span(self, pos: int) -> tuple[int, int]:
        return self.spans[self.index(pos)] if self.spans else (0, len(self.text))

    def at(self, pos: int) -> str:
        start, end = self.span(pos)
        return self.text[start:end].strip()


def _cells(line: str) -> int:
    return len(line.strip().strip("|").split("|"))


def _table_rule(lines: list[str]) -> tuple[str | None, bool]:
    """(rule fired or None, whether the text ends with a complete table row)."""
    block: list[str] = []
    for line in reversed(lines):
        if not line.lstrip().startswith("|"):
            break
        block.append(line.strip())
    if not block:
        return None, False
    block.reverse()
    header, last = block[0], block[-1]
    if len(block) > 1 and (not last.endswith("|") or _cells(last) < _cells(header)):
        return (f"the table's last row has {_cells(last)} of {_cells(header)} cells"
                if last.endswith("|") else "the table's last row is cut off"), False
    return None, last.endswith("|")


def _list_rule(lines: list[str]) -> tuple[str | None, bool]:
    """(rule fired or None, whether the text ends with a consistently unpunctuated list)."""
    items: list[str] = []
    for line in reversed(lines):
        m = _LIST_ITEM.match(line)
        if m is None:
            break
        items.append((m.group(1) or "").strip())
    if not items:
        return None, False
    items.reverse()
    last = items[-1]
    if not last:
        return "the list ends with an empty item", False
    if len(items) == 1:  # one item, after its heading ("Follow-up:\n- replace the belt")
        return None, last[-1] not in ",;:"
    punctuated = [it[-1] in ".;,!?" for it in items[:-1] if it]
    if all(punctuated) and last[-1] not in ".!?":
        return "the list's last item lacks the punctuation the other items have", False
    if not any(punctuated) and last[-1] not in ".!?,;:":
        return None, True  # a list in the no-punctuation style is complete as it is
    return None, False


def truncation_rules(prose: str) -> list[str]:
    """Names of the truncation rules the prose trips (empty list: it ends properly)."""
    text = prose.rstrip()
    if not text:
        return []
    lines = text[-20_000:].splitlines()[-_TAIL_LINES:]
    at = max(0, len(text) - 400)  # the end-of-text rules look at the end only (bounded work)
    table_rule, table_ok = _table_rule(lines)
    list_rule, list_ok = _list_rule(lines)
    fired = [r for r in (table_rule, list_rule) if r]
    if text.endswith(("...", "…")):
        fired.append("ends with an ellipsis")
    elif text.endswith(":"):
        fired.append("ends with a colon: what it announces never follows")
    elif _may_end_at_marker(text) and _EMPTY_MARKER.search(text, at):
        fired.append("ends at a list marker with no item")
    elif not _TERMINAL.search(text, at) and not (table_ok or list_ok) and not fired \
            and not _LABEL_LINE.match(lines[-1]):
        fired.append("no terminal punctuation (. ! ?)")
    if lines[-1].lstrip().startswith("#"):
        fired.append("ends with a heading: its section never follows")
    # a match ends at the end: a word (9 characters at most), white space, "." or ":"
    ws = len(text) - 1 - len(text[:-1].rstrip())
    dangling = _DANGLING.search(text, max(at, len(text) - 1 - ws - 10))
    if dangling is not None:
        fired.append(f"ends with {dangling.group(1)!r}: what it introduces never follows")
    last = _last_token(text).lower()
    if last in CONNECTORS and (text[-1].isalnum() or last in _HARD_CONNECTORS):
        fired.append(f"ends with the connector word {last!r}")
    for open_, close in _PAIRS:
        if (open_ in text or close in text) and text.count(open_) != text.count(close):
            fired.append(f"unbalanced {open_}{close}")
    if '"' in text and text.count('"') % 2:
        fired.append('unbalanced "')
    return fired


def _may_end_at_marker(text: str) -> bool:
    """Can `_EMPTY_MARKER` match at the end of `text` (no trailing white space)? Its last
    character is one of "-*•" or ")", or a "." after a digit."""
    last = text[-1]
    return last in "-*•)" or (last == "." and text[-2:-1].isdecimal())


_ASCII_ALNUM = "".join(c for c in map(chr, range(128)) if c.isalnum())  # `[^\W_]` in ASCII
_ASCII_OTHER = "".join(c for c in map(chr, range(128)) if not c.isalnum())


def _last_token(text: str) -> str:
    """The last word of `text` (no trailing white space), as the last of the words found in
    its last 200 characters; those in the last 40 suffice when the word starts inside them.
    In ASCII text: the run of letters and digits that ends the last 200 characters once what
    follows the last such character is cut off (two `rstrip`s, no regex)."""
    if text.isascii():
        tail = text[-200:].rstrip(_ASCII_OTHER)
        return tail[len(tail.rstrip(_ASCII_ALNUM)):]
    at = max(0, len(text) - 40)
    m = _LAST_TOKEN.search(text, at)
    if m is not None and (m.start() > at or at == 0):
        return m.group()
    tokens = _TOKEN.findall(text, max(0, len(text) - 200))
    return tokens[-1] if tokens else ""
