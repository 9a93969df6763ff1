"""VALUE_GATE's SHACL step (issue 27): the pack's shapes over a cohort's rows, as RDF.

Enabled by `[ontology] shapes = true` (the shapes that come with the ontology files, set
aside from the reasoner's input by the intake) and/or `[ontology] shape_files = [...]`
(shape files in the pack). The shapes are compiled once per gate (`ontology.shapes`) and a
cohort is validated in one pass (SQL over DuckDB).

A row is RDF as the reasoner sees it, plus its data cells: typed by its row class and its
class cells' classes (with every entailed superclass), one value per object cell (the
individual's IRI, typed by its entailed classes), data and text cells as literals (typed by
the property's declared datatype when the value fits it, else by the JSON type). Each
violation is a `value.shape` critique on the cell whose column binds the shape's path
(the first such column for a count), citing the shape and its `sh:message`; its severity
is the shape's (`sh:Violation` error, `sh:Warning` warn, `sh:Info` info).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

from harness.errors import PackError
from harness.models import Artifact, Cell, CellRef, Severity
from harness.pack import Pack
from ontology.index import OntologyIndex
from ontology.load import ontology_files
from ontology.shapes import RowNode, Shapes, ShapeViolation, load_shapes

__all__ = ["ShapeFinding", "ValueShapes"]

_XSD = "http://www.w3.org/2001/XMLSchema#"
_DATATYPES = {
    "integer": _XSD + "integer",
    "decimal": _XSD + "decimal",
    "boolean": _XSD + "boolean",
    "string": _XSD + "string",
}


@dataclass(frozen=True)
class ShapeFinding:
    """One `value.shape` critique for candidate `index`, on cell `ref`."""

    index: int
    ref: CellRef
    observed: Cell
    expected: str | None
    evidence: tuple[str, ...]
    hint: str | None
    message: str
    severity: Severity


class ValueShapes:
    """The pack's shapes, bound to its tables; `check` validates a cohort."""

    def __init__(self, pack: Pack, index: OntologyIndex, shapes: Shapes) -> None:
        self.pack = pack
        self.index = index
        self.pools = index.pools
        self._columns: dict[tuple[str, str], list[tuple[str, str]]] = {}  # (table, path) ->
        bound: dict[str, set[str]] = {}
        for table, b in pack.tables.items():
            for name, col in b.columns.items():
                if col.property and col.kind in ("object", "data", "text"):
                    iri = index.property_iris.get(col.property, col.property)
                    bound.setdefault(table, set()).add(iri)
                    self._columns.setdefault((table, iri), []).append((name, col.kind))
        ns = pack.config.ontology.namespace
        self._roots = {
            (t, n): r
            for t, b in pack.tables.items()
            for n, col in b.columns.items()
            if col.kind == "class"
            and col.root
            and (r := self.pools.root_class(col.root, ns)) is not None
        }
        self.shapes = shapes.bind({t: self._possible(t) for t in pack.tables}, bound)

    @classmethod
    def from_pack(cls, pack: Pack, index: OntologyIndex) -> ValueShapes | None:
        """None when the pack enables no shapes."""
        o = pack.config.ontology
        files = ontology_files(pack.ontology_path, pack.ontology_imports) if o.shapes else []
        for name in o.shape_files:
            path = pack.root / name
            if not path.is_file():
                raise PackError(
                    f"[ontology] shape_files names {name!r}, which does not exist",
                    file=pack.root / "pack.toml",
                    hint="give shape files relative to the pack folder",
                )
            files.append(path)
        return cls(pack, index, load_shapes(files)) if files else None

    # -- rows as RDF ----------------------------------------------------------------------
    def _iri(self, key: str) -> str:
        info = self.pools.classes.get(key)
        return info.iri if info is not None and info.iri else key

    def _closed(self, key: str | None) -> set[str]:
        """The IRIs of a class (pool key) and of its entailed superclasses."""
        if key is None or key not in self.pools.classes:
            return set()
        return {self._iri(key), *(self._iri(s) for s in self.pools.classes[key].superclasses)}

    def _row_key(self, table: str) -> str | None:
        iri = self.index.row_class_iris[table]
        return self.pools.resolve_class(iri) or self.pools.resolve_class(iri.rsplit("#", 1)[-1])

    def _possible(self, table: str) -> set[str]:
        """Every class IRI a row of `table` may be typed by."""
        out = self._closed(self._row_key(table)) | {self.index.row_class_iris[table]}
        for name, col in self.pack.tables[table].columns.items():
            if col.kind == "class":
                root = self._roots.get((table, name))
                under = [
                    k for k in self.pools.classes if root is None or self.pools.is_under(k, root)
                ]
                for k in under:
                    out |= self._closed(k)
        return out

    def _node(self, key: tuple[int, str, int], table: str, row: dict[str, Cell]) -> RowNode:
        types = self._closed(self._row_key(table)) | {self.index.row_class_iris[table]}
        values: list[tuple[str, str, bool, str]] = []
        value_types: set[tuple[str, str]] = set()
        for name, col in self.pack.tables[table].columns.items():
            raw = row.get(name)
            if raw is None or raw == "":
                continue
            if col.kind == "class":  # typed by an admitted class only, as the reasoner is
                cls = self.pools.resolve_class(raw)
                root = self._roots.get((table, name))
                if (
                    cls is not None
                    and not self.pools.classes[cls].unsatisfiable
                    and (root is None or self.pools.is_under(cls, root))
                ):
                    types |= self._closed(cls)
                continue
            if not col.property or col.kind not in ("object", "data", "text"):
                continue
            prop = self.index.property_iris.get(col.property, col.property)
            if col.kind == "object":
                ind = self.pools.resolve(raw)
                if ind is None:
                    continue  # value.unknown already says so
                iri = self.index.individual_iris.get(ind, ind)
                values.append((prop, iri, True, ""))
                info = self.pools.individuals[ind]
                value_types |= {(iri, self._iri(t)) for t in info.types}
            else:
                values.append((prop, *_literal(raw, self.index, col.property)))
        return RowNode(key, frozenset(types), tuple(values), tuple(sorted(value_types)))

    # -- the check --------------------------------------------------------------------------
    def check(self, candidates: Sequence[Artifact]) -> list[ShapeFinding]:
        """Every shape violation of the cohort, as findings on cells."""
        if not self.shapes.constraints:
            return []
        rows = [
            self._node((i, t, r), t, row)
            for i, a in enumerate(candidates)
            for t in self.pack.tables
            for r, row in enumerate(a.tables.get(t, []))
        ]
        out: list[ShapeFinding] = []
        for v in self.shapes.validate(rows):
            i, table, r = cast(tuple[int, str, int], v.key)
            out.append(self._finding(i, table, r, candidates[i].tables[table][r], v))
        return out

    def _finding(
        self, i: int, table: str, r: int, row: dict[str, Cell], v: ShapeViolation
    ) -> ShapeFinding:
        c = v.constraint
        columns = self._columns.get((table, c.path), [])
        column = columns[0][0]
        for name, _kind in columns:  # the column holding the offending value
            if v.value is not None and _matches(self, row.get(name), v.value):
                column = name
                break
        ref = CellRef(table=table, row=r, column=column)
        arg = " | ".join(c.arg.split("\x1f"))
        return ShapeFinding(
            index=i,
            ref=ref,
            observed=row.get(column),
            expected=arg or None,
            evidence=(
                f"shape {c.shape}",
                f"sh:targetClass <{c.target}>",
                f"sh:path <{c.path}>",
                f"sh:{c.kind} {arg}",
            ),
            hint=_HINTS.get(c.kind, "give a value the shape allows").format(arg),
            message=f"shape {c.shape}: {v.text}",
            severity=_severity(c.severity),
        )


_HINTS = {
    "minCount": "give at least {} value(s)",
    "maxCount": "give at most {} value(s)",
    "class": "name an individual of <{}>",
    "datatype": "give a literal of datatype <{}>",
    "in": "write one of: {}",
    "classIn": "name an individual of one of: {}",
    "hasValue": "give the value {}",
}


def _severity(s: str) -> Severity:
    return "warn" if s == "warn" else "info" if s == "info" else "error"


def _matches(shapes: ValueShapes, raw: Cell, value: str) -> bool:
    ind = shapes.pools.resolve(raw)
    if ind is not None:
        return shapes.index.individual_iris.get(ind, ind) == value
    return raw is not None and _literal(raw, shapes.index, None)[0] == value


def _literal(raw: Cell, index: OntologyIndex, prop: str | None) -> tuple[str, bool, str]:
    """(lexical form, False, datatype IRI) of a data or text cell."""
    rule = index.data_rules.get(prop) if prop else None
    declared = _DATATYPES.get(rule.datatype) if rule is not None else None
    if isinstance(raw, bool):
        return ("true" if raw else "false"), False, _XSD + "boolean"
    if isinstance(raw, int):
        fits = declared in (_XSD + "integer", _XSD + "decimal")
        return str(raw), False, declared if fits and declared else _XSD + "integer"
    if isinstance(raw, float):
        text = repr(raw)
        fits = declared == _XSD + "decimal" or (declared == _XSD + "integer" and raw.is_integer())
        if fits and declared == _XSD + "integer":
            text = str(int(raw))
        return text, False, declared if fits and declared else _XSD + "decimal"
    return str(raw), False, _XSD + "string"
