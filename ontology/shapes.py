"""SHACL shapes over a cohort's rows, compiled to SQL over DuckDB (issue 27).

The intake sets SHACL aside from the reasoner's input (`ontology.normalise`, reason
`shacl`); a pack that says `[ontology] shapes = true` (the shapes that come with its
ontology files) or `shape_files = [...]` (shapes of its own) has them checked by VALUE_GATE.

**Compiled, not interpreted.** The shapes are read once (pyoxigraph) into constraint rows:
(shape, target class, path, kind, argument, message, severity). A cohort's rows become RDF
facts in DuckDB: each row `<urn:membrane:row#…>` typed by its row class and its class
cells' classes, with every entailed superclass (from the cached classification, so no
ontology travels with the data), its object cells' individuals (typed likewise) and its
data cells' literals. One SQL query per constraint kind joins the three tables and returns
every violation of the whole cohort: the number of queries does not grow with the shapes.

Supported (the kinds Brick 1.4 and hand-written packs use most): targets `sh:targetClass`
and implicit class targets (a shape that is also a class); property shapes with an IRI
`sh:path` and `sh:minCount`, `sh:maxCount`, `sh:class`, `sh:datatype`, `sh:in`,
`sh:hasValue`, `sh:nodeKind`, `sh:or` of `sh:class` or of `sh:datatype` alternatives, `sh:minInclusive`, `sh:maxInclusive`, `sh:minExclusive`,
`sh:maxExclusive`, `sh:minLength`, `sh:maxLength`, `sh:pattern`; `sh:message`,
`sh:severity`, `sh:deactivated`. What is not (SHACL-AF rules, SPARQL, other `sh:or`s, `sh:and`/
`sh:not`/`sh:xone`/`sh:node`, qualified shapes, complex paths, other targets) is counted in
`Shapes.skipped` (for `pack check`), never silently passed off as checked. A property shape
whose path no column of a targeted table binds is `Shapes.unbound`: those rows cannot carry
the property at all, so it is a pack design question, reported and not checked per row.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import pyoxigraph as ox

from ontology.rdf import parse_file

__all__ = ["Constraint", "RowNode", "ShapeViolation", "Shapes", "load_shapes"]

SH = "http://www.w3.org/ns/shacl#"
_RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
_XSD = "http://www.w3.org/2001/XMLSchema#"
_CLASSES = {"http://www.w3.org/2002/07/owl#Class", "http://www.w3.org/2000/01/rdf-schema#Class"}
_VALUED = (
    "minCount",
    "maxCount",
    "class",
    "datatype",
    "hasValue",
    "nodeKind",
    "minInclusive",
    "maxInclusive",
    "minExclusive",
    "maxExclusive",
    "minLength",
    "maxLength",
    "pattern",
)
_UNSUPPORTED = (
    "or",
    "and",
    "not",
    "xone",
    "node",
    "qualifiedValueShape",
    "sparql",
    "equals",
    "disjoint",
    "lessThan",
    "lessThanOrEquals",
    "uniqueLang",
    "languageIn",
    "closed",
)
_Term = ox.NamedNode | ox.BlankNode | ox.Literal | ox.Triple
_Node = ox.NamedNode | ox.BlankNode
_SEVERITY = {SH + "Violation": "error", SH + "Warning": "warn", SH + "Info": "info"}


@dataclass(frozen=True)
class Constraint:
    """One compiled constraint of a property shape on the instances of `target`."""

    shape: str  # the property shape (IRI, or its node shape's IRI + path for blank nodes)
    target: str  # class IRI
    path: str  # property IRI
    kind: str  # a SHACL constraint component's local name ("minCount", "class", ...), or
    # "classIn" / "datatypeIn": an sh:or of sh:class (sh:datatype) alternatives
    arg: str  # the IRI / lexical form / number as text; for "in", the members joined by \x1f
    message: str = ""
    severity: str = "error"  # "error" | "warn" | "info"


@dataclass(frozen=True)
class RowNode:
    """A row as RDF: its key (the caller's), the IRIs of its types (entailed superclasses
    included), its values: (property IRI, value, is_iri, datatype IRI or ""), and the types
    of its IRI values: (value IRI, class IRI), entailed superclasses included."""

    key: object
    types: frozenset[str]
    values: tuple[tuple[str, str, bool, str], ...]
    value_types: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class ShapeViolation:
    key: object  # the RowNode's key
    constraint: Constraint
    value: str | None  # the offending value, None for a count

    @property
    def text(self) -> str:
        """The shape's sh:message, else a sentence naming the constraint."""
        c = self.constraint
        if c.message:
            return c.message
        what = {
            "minCount": "at least {} value(s)",
            "maxCount": "at most {} value(s)",
            "class": "values of class <{}>",
            "datatype": "values of datatype <{}>",
            "in": "one of {}",
            "classIn": "values of one of the classes {}",
            "datatypeIn": "values of one of the datatypes {}",
            "hasValue": "the value {}",
            "nodeKind": "values of kind {}",
            "minInclusive": "values >= {}",
            "maxInclusive": "values <= {}",
            "minExclusive": "values > {}",
            "maxExclusive": "values < {}",
            "minLength": "values of at least {} characters",
            "maxLength": "values of at most {} characters",
            "pattern": "values matching {}",
        }[c.kind]
        arg = ", ".join(c.arg.split("\x1f"))
        return f"<{c.path}> needs {what.format(arg)} (sh:{c.kind})"


@dataclass
class Shapes:
    """The compiled constraints, and what was read but is not checked."""

    constraints: tuple[Constraint, ...] = ()
    skipped: Counter[str] = field(default_factory=Counter)  # reason -> shapes
    unbound: tuple[Constraint, ...] = ()  # paths no column binds (set by `bind`)
    _con: duckdb.DuckDBPyConnection | None = None

    def bind(self, targets: dict[str, set[str]], bound: dict[str, set[str]]) -> Shapes:
        """Keep the constraints a table's rows can meet: `targets` table -> the class IRIs
        its rows may have, `bound` table -> the property IRIs its columns bind."""
        keep: list[Constraint] = []
        unbound: list[Constraint] = []
        for c in self.constraints:
            tables = [t for t, classes in targets.items() if c.target in classes]
            if not tables:
                continue
            (keep if any(c.path in bound.get(t, set()) for t in tables) else unbound).append(c)
        return Shapes(tuple(keep), self.skipped, tuple(unbound))

    @property
    def targets(self) -> frozenset[str]:
        return frozenset(c.target for c in self.constraints)

    def validate(self, rows: Sequence[RowNode]) -> list[ShapeViolation]:
        """Every violation of the compiled constraints by `rows` (one cohort, one pass)."""
        focus = [r for r in rows if r.types & self.targets]
        if not focus or not self.constraints:
            return []
        con = self._connection()
        keys = {i: r.key for i, r in enumerate(focus)}
        types = [(i, t) for i, r in enumerate(focus) for t in r.types]
        facts = [
            (i, p, v, is_iri, dt) for i, r in enumerate(focus) for p, v, is_iri, dt in r.values
        ]
        con.execute("BEGIN")
        try:
            con.execute(
                "INSERT INTO node_type SELECT unnest($1), unnest($2)",
                [[t[0] for t in types], [t[1] for t in types]],
            )
            if facts:
                con.execute(
                    "INSERT INTO fact SELECT unnest($1), unnest($2), unnest($3), unnest($4), "
                    "unnest($5)",
                    [list(col) for col in zip(*facts, strict=True)],
                )
            # the types of the values (individuals): for sh:class
            value_types = sorted({vt for r in focus for vt in r.value_types})
            if value_types:
                con.execute(
                    "INSERT INTO value_type SELECT unnest($1), unnest($2)",
                    [[v for v, _ in value_types], [t for _, t in value_types]],
                )
            found = con.execute(_VIOLATIONS).fetchall()
        finally:
            con.execute("ROLLBACK")
        by_id = dict(enumerate(self.constraints))
        return sorted(
            (ShapeViolation(keys[n], by_id[c], v) for n, c, v in found),
            key=lambda x: (str(x.key), x.constraint.shape, x.constraint.kind, x.value or ""),
        )

    def _connection(self) -> duckdb.DuckDBPyConnection:
        if self._con is None:
            con = duckdb.connect(":memory:")
            con.execute(_SCHEMA)
            rows = [
                (i, c.target, c.path, c.kind, c.arg, _number(c))
                for i, c in enumerate(self.constraints)
            ]
            con.execute(
                "INSERT INTO shape SELECT unnest($1), unnest($2), unnest($3), "
                "unnest($4), unnest($5), unnest($6)",
                [list(col) for col in zip(*rows, strict=True)],
            )
            members = [
                (i, m)
                for i, c in enumerate(self.constraints)
                if c.kind in ("in", "classIn", "datatypeIn")
                for m in c.arg.split("\x1f")
            ]
            if members:
                con.execute(
                    "INSERT INTO shape_in SELECT unnest($1), unnest($2)",
                    [[i for i, _ in members], [m for _, m in members]],
                )
            self._con = con
        return self._con

    def close(self) -> None:
        if self._con is not None:
            self._con.close()
            self._con = None


def _number(c: Constraint) -> float | None:
    if c.kind in (
        "minCount",
        "maxCount",
        "minLength",
        "maxLength",
        "minInclusive",
        "maxInclusive",
        "minExclusive",
        "maxExclusive",
    ):
        try:
            return float(c.arg)
        except ValueError:
            return None
    return None


_SCHEMA = """
CREATE TABLE shape (id INTEGER, target VARCHAR, path VARCHAR, kind VARCHAR, arg VARCHAR,
                    num DOUBLE);
CREATE TABLE shape_in (id INTEGER, member VARCHAR);
CREATE TABLE node_type (node INTEGER, cls VARCHAR);
CREATE TABLE fact (node INTEGER, path VARCHAR, value VARCHAR, is_iri BOOLEAN, datatype VARCHAR);
CREATE TABLE value_type (value VARCHAR, cls VARCHAR);
"""

# focus: (row, constraint) for every row of a constraint's target class
_VIOLATIONS = """
WITH focus AS (
    SELECT DISTINCT t.node, s.id, s.path, s.kind, s.arg, s.num
    FROM node_type t JOIN shape s ON s.target = t.cls
), vals AS (
    SELECT f.node, f.id, f.kind, f.arg, f.num, v.value, v.is_iri, v.datatype,
           TRY_CAST(v.value AS DOUBLE) AS x
    FROM focus f JOIN fact v ON v.node = f.node AND v.path = f.path
)
SELECT f.node, f.id, NULL FROM focus f
LEFT JOIN (SELECT node, path, count(DISTINCT value) AS n FROM fact GROUP BY node, path) c
    ON c.node = f.node AND c.path = f.path
WHERE (f.kind = 'minCount' AND coalesce(c.n, 0) < f.num)
   OR (f.kind = 'maxCount' AND coalesce(c.n, 0) > f.num)
UNION ALL
SELECT f.node, f.id, NULL FROM focus f
WHERE f.kind = 'hasValue'
  AND NOT EXISTS (SELECT 1 FROM fact v WHERE v.node = f.node AND v.path = f.path
                  AND v.value = f.arg)
UNION ALL
SELECT node, id, value FROM vals WHERE
    (kind = 'class' AND NOT (is_iri AND EXISTS (
        SELECT 1 FROM value_type t WHERE t.value = vals.value AND t.cls = vals.arg)))
 OR (kind = 'datatype' AND (is_iri OR datatype <> arg))
 OR (kind = 'classIn' AND NOT (is_iri AND EXISTS (
        SELECT 1 FROM value_type t JOIN shape_in i ON i.member = t.cls
        WHERE i.id = vals.id AND t.value = vals.value)))
 OR (kind = 'datatypeIn' AND (is_iri OR NOT EXISTS (
        SELECT 1 FROM shape_in i WHERE i.id = vals.id AND i.member = vals.datatype)))
 OR (kind = 'in' AND NOT EXISTS (
        SELECT 1 FROM shape_in i WHERE i.id = vals.id AND i.member = vals.value))
 OR (kind = 'nodeKind' AND (CASE arg
        WHEN 'http://www.w3.org/ns/shacl#IRI' THEN NOT is_iri
        WHEN 'http://www.w3.org/ns/shacl#Literal' THEN is_iri
        WHEN 'http://www.w3.org/ns/shacl#BlankNode' THEN TRUE
        WHEN 'http://www.w3.org/ns/shacl#BlankNodeOrLiteral' THEN is_iri
        ELSE FALSE END))
 OR (kind = 'minInclusive' AND NOT coalesce(x >= num, FALSE))
 OR (kind = 'maxInclusive' AND NOT coalesce(x <= num, FALSE))
 OR (kind = 'minExclusive' AND NOT coalesce(x > num, FALSE))
 OR (kind = 'maxExclusive' AND NOT coalesce(x < num, FALSE))
 OR (kind = 'minLength' AND length(value) < num)
 OR (kind = 'maxLength' AND length(value) > num)
 OR (kind = 'pattern' AND NOT regexp_matches(value, arg))
"""


# -- reading shapes -------------------------------------------------------------------------
def load_shapes(files: Sequence[Path]) -> Shapes:
    """The shapes of `files` (any RDF syntax the intake reads), compiled."""
    store = ox.Store()
    for f in files:
        parsed = parse_file(f)
        store.bulk_extend(ox.Quad(t.subject, t.predicate, t.object) for t in parsed.triples)
    return _compile(store)


def _objects(store: ox.Store, s: _Node, p: str) -> list[_Term]:
    return [q.object for q in store.quads_for_pattern(s, ox.NamedNode(p), None, None)]


def _list(store: ox.Store, head: _Term) -> list[_Term]:
    out: list[_Term] = []
    seen: set[str] = set()
    node = head
    while (
        isinstance(node, ox.BlankNode | ox.NamedNode)
        and node.value != _RDF + "nil"
        and str(node) not in seen
    ):
        seen.add(str(node))
        out += _objects(store, node, _RDF + "first")[:1]
        rest = _objects(store, node, _RDF + "rest")
        node = rest[0] if rest else ox.NamedNode(_RDF + "nil")
    return out


def _text(term: _Term) -> str:
    return term.value if isinstance(term, ox.NamedNode | ox.Literal) else str(term)


def _compile(store: ox.Store) -> Shapes:
    rdf_type = ox.NamedNode(_RDF + "type")
    shapes: set[ox.NamedNode | ox.BlankNode] = set()
    for q in store.quads_for_pattern(None, rdf_type, ox.NamedNode(SH + "NodeShape"), None):
        shapes.add(q.subject)  # type: ignore[arg-type]
    for p in ("property", "targetClass"):
        for q in store.quads_for_pattern(None, ox.NamedNode(SH + p), None, None):
            shapes.add(q.subject)  # type: ignore[arg-type]
    skipped: Counter[str] = Counter()
    out: list[Constraint] = []
    for s in sorted(shapes, key=str):
        if _true(store, s, "deactivated"):
            continue
        targets = [
            _text(o) for o in _objects(store, s, SH + "targetClass") if isinstance(o, ox.NamedNode)
        ]
        if any(_text(o) in _CLASSES for o in _objects(store, s, _RDF + "type")):
            targets.append(_text(s))  # implicit class target
        others = [
            k
            for k in ("targetNode", "targetSubjectsOf", "targetObjectsOf", "target")
            if _objects(store, s, SH + k)
        ]
        skipped.update(f"target sh:{k}" for k in others)
        skipped.update(
            f"node-level sh:{k}"
            for k in (*_VALUED, "in", *_UNSUPPORTED)
            if _objects(store, s, SH + k)
        )
        if _objects(store, s, SH + "rule"):
            skipped["sh:rule (SHACL-AF rules infer, they do not constrain)"] += 1
        for ps in _objects(store, s, SH + "property"):
            if isinstance(ps, ox.NamedNode | ox.BlankNode) and not _true(store, ps, "deactivated"):
                out += _property(store, s, ps, targets, skipped)
    return Shapes(tuple(out), skipped)


def _property(
    store: ox.Store, s: _Node, ps: _Node, targets: list[str], skipped: Counter[str]
) -> list[Constraint]:
    """The constraints of property shape `ps` of node shape `s`, one per target class."""
    paths = _objects(store, ps, SH + "path")
    if len(paths) != 1 or not isinstance(paths[0], ox.NamedNode):
        skipped["property shape with a complex sh:path"] += 1
        return []
    path = paths[0].value
    name = ps.value if isinstance(ps, ox.NamedNode) else f"{_text(s)} sh:property [{path}]"
    message = _message(store, ps) or _message(store, s)
    severity = _severity(store, ps) or _severity(store, s) or "error"
    unsupported = [k for k in _UNSUPPORTED if _objects(store, ps, SH + k)]
    kinds: list[tuple[str, str]] = []
    if "or" in unsupported and (alternatives := _simple_or(store, ps)) is not None:
        unsupported.remove("or")
        kinds.append(alternatives)
    skipped.update(f"sh:{k}" for k in unsupported)
    for k in _VALUED:
        kinds += [(k, _text(o)) for o in _objects(store, ps, SH + k)]
    for o in _objects(store, ps, SH + "in"):
        kinds.append(("in", "\x1f".join(_text(m) for m in _list(store, o))))
    out: list[Constraint] = []
    for k, arg in kinds:
        if k == "pattern" and not _regex_ok(arg):
            skipped["sh:pattern DuckDB cannot compile"] += 1
            continue
        out += [Constraint(name, t, path, k, arg, message, severity) for t in targets]
    return out


def _simple_or(store: ox.Store, ps: _Node) -> tuple[str, str] | None:
    """`sh:or` of alternatives that each say only `sh:class X` (or only `sh:datatype X`), as
    Brick writes them: ("classIn" | "datatypeIn", the Xs joined by \\x1f); else None."""
    for head in _objects(store, ps, SH + "or"):
        alts = _list(store, head)
        for kind in ("class", "datatype"):
            args: list[str] = []
            for alt in alts:
                if not isinstance(alt, ox.NamedNode | ox.BlankNode):
                    return None
                preds = {q.predicate.value for q in store.quads_for_pattern(alt, None, None, None)}
                if preds != {SH + kind}:
                    break
                args += [_text(o) for o in _objects(store, alt, SH + kind)]
            else:
                if args:
                    return kind + "In", "\x1f".join(args)
    return None


def _true(store: ox.Store, s: _Node, p: str) -> bool:
    return any(_text(o) == "true" for o in _objects(store, s, SH + p))


def _message(store: ox.Store, s: _Node) -> str:
    msgs = [o for o in _objects(store, s, SH + "message") if isinstance(o, ox.Literal)]
    english = [m for m in msgs if (m.language or "en").startswith("en")]
    return (english or msgs)[0].value if msgs else ""


def _severity(store: ox.Store, s: _Node) -> str:
    for o in _objects(store, s, SH + "severity"):
        return _SEVERITY.get(_text(o), "error")
    return ""


def _regex_ok(pattern: str) -> bool:
    try:
        re.compile(pattern)
    except re.error:
        return False
    return True
