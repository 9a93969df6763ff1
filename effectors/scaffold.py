"""The scaffold tools: pure functions over a pack, its pools and an artifact.

The offline proposer calls them directly; LLM proposers get them by function calling.

* `synth_column`  admissible values for object cells, drawn deterministically from the class
                  each cell must belong to, preferring values that keep the row coherent
* `rebuild_table` a table whose keys hold: duplicate primary keys renumbered, dangling
                  foreign keys pointed at an existing key of the referenced table
* `draft_prose`   prose drafted from the tables that passes the prose gate

Helpers used by proposers: `foreign_keys` (read from the pack's DDL), `fresh_key`,
`pick_reference`, `seeded_index`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence

from effectors.prose.matcher import EntityMatcher
from effectors.prose.text import truncation_rules
from effectors.prose.view import key_entities, view_of
from harness.models import Artifact, Cell
from harness.pack import Pack
from harness.pools import Pools

__all__ = [
    "candidates",
    "draft_prose",
    "foreign_keys",
    "fresh_key",
    "pick_reference",
    "rebuild_table",
    "seeded_index",
    "synth_column",
]

_CREATE = re.compile(
    r"CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?\"?(\w+)\"?\s*\((.*?)\)\s*;", re.I | re.S
)
_TABLE_FK = re.compile(
    r"FOREIGN\s+KEY\s*\(([^)]*)\)\s*REFERENCES\s+\"?(\w+)\"?\s*(?:\(([^)]*)\))?", re.I
)
_COLUMN_FK = re.compile(r"REFERENCES\s+\"?(\w+)\"?\s*(?:\(\s*\"?(\w+)\"?\s*\))?", re.I)
_NUMBERED = re.compile(r"^(.*?)(\d+)$")
_MAX_WORDS = 280
_MIN_WORDS = 100
_FILLER = (
    "Every value in this record was checked against the pack ontology before it was admitted.",
    "Keys and references between the tables were verified as well.",
    "The details above are taken directly from the verified tables.",
    "Nothing in this summary goes beyond what the tables state.",
    "Where a value was corrected during review, the summary reflects the corrected value.",
    "Readers who need the full detail should consult the tables themselves.",
    "This summary was drafted automatically and is the same for the same record.",
    "It is meant as a short narrative companion to the structured data.",
    "Each sentence refers only to entries that appear in the tables.",
    "No further claims are made about the items described here.",
)
_CLOSING = "This concludes the summary of the record."


def seeded_index(n: int, *parts: object) -> int:
    """A deterministic index in range(n) from sha256 over the parts."""
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % n


def _coherence(
    pools: Pools, row_class: str, prop: str, value: str, others: dict[str, str | None]
) -> int | None:
    """None if putting `value` in `prop` makes a row requirement fail for another cell;
    else the number of requirements it activates that the other cells satisfy."""
    values = {**others, prop: value}
    required = pools.required_classes(row_class, values)
    for p, v in values.items():
        if v is not None and p in required and not pools.is_member(v, required[p]):
            return None
    score = 0
    for rule in pools.row_rules:
        if rule.base_class != row_class or prop not in rule.when:
            continue
        if all(
            (v := values.get(p)) is not None and pools.is_member(v, c) for p, c in rule.when.items()
        ):
            score += sum(
                1
                for p, c in rule.require.items()
                if p != prop and (v := values.get(p)) is not None and pools.is_member(v, c)
            )
    return score


def candidates(
    pools: Pools,
    row_class: str,
    prop: str,
    others: dict[str, str | None],
    within: str | None = None,
) -> list[str]:
    """Individuals admissible for `prop` in a row of `row_class` whose other object cells hold
    `others`, best-fitting first-class only (sorted). `within` narrows to a class's members."""
    cls = pools.required_classes(row_class, others).get(prop)
    pool = set(pools.members(cls)) if cls else set()
    narrow = set(pools.members(within)) if within else set()
    if narrow:
        pool = (pool & narrow) or narrow
    scored = [
        (s, c)
        for c in sorted(pool)
        if (s := _coherence(pools, row_class, prop, c, others)) is not None
    ]
    if not scored:
        return sorted(pool)
    best = max(s for s, _ in scored)
    return [c for s, c in scored if s == best]


def synth_column(
    pack: Pack,
    pools: Pools,
    artifact: Artifact,
    table: str,
    column: str,
    rows: Iterable[int] | None = None,
    *,
    seed: int | str,
    within: str | None = None,
) -> dict[int, str]:
    """row index -> preferred label of a value for the object cell `table[row].column`.

    The value is a member of the class the cell must belong to given the row's other object
    cells (`Pools.required_classes`), else of the property's range class; among those, values
    that keep the row coherent (and that other cells of the row positively fit) are preferred.
    The cell's current value is never proposed again while there is another choice. `within`
    (e.g. a critique's expected class) narrows the choice. Rows with no admissible value are
    left out of the result.
    """
    binding = pack.tables[table]
    col = binding.columns[column]
    if col.kind != "object" or col.property is None:
        raise ValueError(f"{table}.{column} is not an object column")
    prop = col.property
    other_cols = {
        c: b.property
        for c, b in binding.columns.items()
        if b.kind == "object" and b.property and c != column
    }
    table_rows = artifact.tables.get(table, [])
    out: dict[int, str] = {}
    for i in range(len(table_rows)) if rows is None else rows:
        row = table_rows[i]
        others = {p: pools.resolve(row.get(c)) for c, p in other_cols.items() if p}
        pool = candidates(pools, binding.row_class, prop, others, within)
        current = pools.resolve(row.get(column))
        if current in pool and len(pool) > 1:
            pool.remove(current)
        if pool:
            out[i] = pools.label(pool[seeded_index(len(pool), seed, artifact.id, table, i, column)])
    return out


def _split_top(body: str) -> list[str]:
    parts: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in body:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


def foreign_keys(pack: Pack) -> dict[tuple[str, str], tuple[str, str]]:
    """(table, column) -> (referenced table, referenced column), read from the pack's DDL."""
    ddl = re.sub(r"--[^\n]*", "", pack.spine_path.read_text(encoding="utf-8"))
    fks: dict[tuple[str, str], tuple[str, str]] = {}
    for m in _CREATE.finditer(ddl):
        table = m.group(1)
        for part in _split_top(m.group(2)):
            if tfk := _TABLE_FK.match(part):
                cols = [c.strip().strip('"') for c in tfk.group(1).split(",")]
                ref = tfk.group(2)
                ref_cols = (
                    [c.strip().strip('"') for c in tfk.group(3).split(",")]
                    if tfk.group(3)
                    else _key_of(pack, ref)
                )
                fks.update({(table, c): (ref, rc) for c, rc in zip(cols, ref_cols, strict=False)})
            elif cfk := _COLUMN_FK.search(part):
                column = part.split()[0].strip('"')
                ref_col = cfk.group(2) or (_key_of(pack, cfk.group(1)) or [column])[0]
                fks[(table, column)] = (cfk.group(1), ref_col)
    return fks


def _key_of(pack: Pack, table: str) -> list[str]:
    binding = pack.tables.get(table)
    return list(binding.key) if binding else []


def fresh_key(existing: Iterable[Cell], like: Cell) -> str:
    """A key not among `existing`, shaped like `like` ('EQ-003' -> 'EQ-0NN')."""
    taken = {str(v) for v in existing if v is not None}
    base = str(like) if like not in (None, "") else "key"
    m = _NUMBERED.match(base)
    prefix, width = (m.group(1), len(m.group(2))) if m else (base + "-", 1)
    numbers = [
        int(k.group(2))
        for v in taken
        if (k := _NUMBERED.match(v)) is not None and k.group(1) == prefix
    ]
    n = max(numbers, default=0) + 1
    while f"{prefix}{n:0{width}d}" in taken:
        n += 1
    return f"{prefix}{n:0{width}d}"


def pick_reference(artifact: Artifact, ref_table: str, ref_column: str, *parts: object) -> Cell:
    """An existing key of `ref_table.ref_column`, chosen deterministically from `parts`."""
    keys = sorted(
        {
            str(r[ref_column])
            for r in artifact.tables.get(ref_table, [])
            if r.get(ref_column) is not None
        }
    )
    if not keys:
        return None
    return keys[seeded_index(len(keys), ref_table, ref_column, *parts)]


def rebuild_table(
    pack: Pack, pools: Pools, artifact: Artifact, table: str, *, seed: int | str
) -> list[dict[str, Cell]]:
    """The rows of `table` with unique primary keys and no dangling foreign keys.

    Later duplicates of a key get a fresh key; a foreign key that names no row of the
    referenced table is pointed at an existing one. `pools` is unused today (object
    cells are `synth_column`'s job) but keeps the tools' signatures uniform.
    """
    del pools
    rows = [dict(r) for r in artifact.tables.get(table, [])]
    binding = pack.tables[table]
    key_col = next((k for k in binding.key if binding.columns[k].kind == "id"), binding.key[0])
    seen: set[tuple[Cell, ...]] = set()
    for row in rows:
        key = tuple(row.get(k) for k in binding.key)
        if key in seen:
            row[key_col] = fresh_key([r.get(key_col) for r in rows], row.get(key_col))
            key = tuple(row.get(k) for k in binding.key)
        seen.add(key)
    for (t, column), (ref_table, ref_column) in sorted(foreign_keys(pack).items()):
        if t != table:
            continue
        existing = {r.get(ref_column) for r in artifact.tables.get(ref_table, [])}
        for i, row in enumerate(rows):
            if row.get(column) not in existing or row.get(column) is None:
                row[column] = pick_reference(artifact, ref_table, ref_column, seed, table, i)
    return rows


def _format(value: Cell) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _join(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _row_sentence(pack: Pack, pools: Pools, table: str, row: Mapping[str, Cell]) -> str | None:
    binding = pack.tables[table]
    parts: list[str] = []
    for kind in ("object", "data", "id"):
        for column, b in binding.columns.items():
            value = row.get(column)
            if b.kind != kind or column in binding.key or value is None:
                continue
            if kind == "object":
                ind = pools.resolve(value)
                if ind is None:
                    continue
                text = pools.label(ind)
            else:
                text = _format(value)
            parts.append(f"{column.replace('_', ' ')} {text}")
    if not parts:
        return None
    return f"In the {table} table, {pack.row_key(table, dict(row))} has {_join(parts)}."


def _entity_sentences(pack: Pack, pools: Pools, artifact: Artifact) -> list[str]:
    sentences = []
    for ref in pack.config.prose.entity_columns:
        table, _, column = ref.partition(".")
        inds: dict[str, None] = {}
        for row in artifact.tables.get(table, []):
            if (ind := pools.resolve(row.get(column))) is not None:
                inds.setdefault(ind, None)
        labels = [pools.label(i) for i in inds]
        phrase = column.replace("_", " ")
        if len(labels) == 1:
            sentences.append(f"The only {phrase} named in the {table} table is {labels[0]}.")
        elif labels:
            sentences.append(f"The {phrase}s named in the {table} table are {_join(labels)}.")
    return sentences


def draft_prose(
    pack: Pack,
    pools: Pools,
    artifact: Artifact,
    *,
    matcher: EntityMatcher | None = None,
    words: tuple[float, float] | None = None,
) -> str:
    """Deterministic prose from the tables: every key entity by its preferred label, other
    table entities where the word budget allows, no other pool entity, complete sentences,
    100-300 words for artifacts of ordinary size, or within `words` (low, high) when given
    (a prose field's length band: the key entities come first, whatever their length)."""
    low, high = (_MIN_WORDS, _MAX_WORDS) if words is None else words
    matcher = matcher or EntityMatcher(pools)
    view = view_of(pack, pools, artifact)
    keys = key_entities(pack, pools, artifact)

    def ok(sentence: str) -> bool:
        return matcher.mentioned(sentence) <= view and not truncation_rules(sentence)

    sentences = [s for s in _entity_sentences(pack, pools, artifact) if ok(s)]
    covered = set().union(*(matcher.mentioned(s) for s in sentences)) if sentences else set()
    sentences += [f"It also covers {pools.label(k)}." for k in keys if k not in covered]
    count = sum(len(s.split()) for s in sentences)
    closing = len(_CLOSING.split()) if words is not None else 0
    entity_tables = [r.partition(".")[0] for r in pack.config.prose.entity_columns]
    order = list(dict.fromkeys([*entity_tables, *pack.tables]))
    for table in order:
        for row in artifact.tables.get(table, []) if table in pack.tables else []:
            s = _row_sentence(pack, pools, table, row)
            # the word budget first: `ok` reads the sentence (a scan, the truncation rules)
            if s and count + len(s.split()) + closing <= high and ok(s):
                sentences.append(s)
                count += len(s.split())
    for s in _FILLER:
        if count + closing >= low or (words is not None and
                                      count + len(s.split()) + closing > high):
            break
        if ok(s):
            sentences.append(s)
            count += len(s.split())
    if ok(_CLOSING) and (words is None or count + closing <= high):
        sentences.append(_CLOSING)
    return " ".join(sentences)
