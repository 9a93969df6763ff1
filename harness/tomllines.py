"""Line numbers of the keys of a TOML file, for errors that point at `pack.toml:LINE`.

`tomllib` gives values, not positions. `key_lines` scans the text once: each header
(`[a.b]`, `[[a.b]]`, the n-th array element as index n) and each `key = value` line
(dotted and quoted keys too) becomes a path -> line entry. `locate` finds the line of a
path such as pydantic's error `loc` ("tables", "rooms", "columns", "floor", "property"):
the longest prefix the file spells out (a key inside an inline table is on its parent's
line). Best effort, never an exception: text that is not TOML gives fewer entries.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["KeyPath", "key_lines", "locate"]

KeyPath = tuple[str | int, ...]


def _split_key(text: str) -> list[str]:
    """`a."b.c".d` -> ["a", "b.c", "d"] (bare, "basic" and 'literal' parts)."""
    parts: list[str] = []
    cur: list[str] = []
    quote = ""
    for ch in text:
        if quote:
            if ch == quote:
                quote = ""
            else:
                cur.append(ch)
        elif ch in "\"'":
            quote = ch
        elif ch == ".":
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur).strip())
    return parts


def _key_end(line: str) -> int:
    """The index of the `=` that ends the key of `line`, or -1 (not outside quotes)."""
    quote = ""
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch == "=":
            return i
        elif ch == "#":
            return -1
    return -1


def _open_brackets(value: str) -> int:
    """How many `[`/`{` the value leaves open (outside strings and comments)."""
    depth, quote = 0, ""
    for ch in value:
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch == "#":
            break
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
    return depth


def key_lines(text: str) -> dict[KeyPath, int]:
    """path -> 1-based line of every header and key the text spells out (first wins)."""
    found: dict[KeyPath, int] = {}
    arrays: dict[KeyPath, int] = {}
    section: KeyPath = ()
    depth = 0
    in_string = ""
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if in_string:  # inside a multi-line string value
            if in_string in line:
                in_string = ""
            continue
        if depth > 0:  # inside a multi-line array or inline table
            depth += _open_brackets(line)
            continue
        if not line or line.startswith("#"):
            continue
        if line.startswith("[["):
            end = line.find("]]")
            base = tuple(_split_key(line[2:end if end > 0 else len(line)]))
            index = arrays.get(base, -1) + 1
            arrays[base] = index
            section = (*base, index)
            found.setdefault(base, number)
            found.setdefault(section, number)
            continue
        if line.startswith("["):
            end = line.find("]")
            section = tuple(_split_key(line[1:end if end > 0 else len(line)]))
            found.setdefault(section, number)
            continue
        eq = _key_end(line)
        if eq <= 0:
            continue
        found.setdefault((*section, *_split_key(line[:eq])), number)
        value = line[eq + 1:].strip()
        for q in ('"""', "'''"):
            if value.startswith(q) and value.count(q) == 1:
                in_string = q
        depth = max(0, _open_brackets(value))
    return found


def locate(index: dict[KeyPath, int], loc: Sequence[str | int]) -> int | None:
    """The line of `loc`, or of its longest prefix the file spells out; None if none."""
    path = tuple(loc)
    while path:
        line = index.get(path)
        if line is not None:
            return line
        path = path[:-1]
    return None
