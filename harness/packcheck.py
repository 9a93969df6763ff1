"""`membrane pack check DIR`: everything a batch would refuse in a pack, reported together,
each problem with its file, line and a fix; plus warnings about the pack's quality.

The batch's own setup (`load_pack`, the ontology checks and classification, RI_GATE's spine,
bounds and assertions, the prose gate, the chapter template) raises the first `PackError`
it meets. This module checks the same things piece by piece and keeps going: each
section of pack.toml is validated on its own (with the same pydantic models), the
cross-references between sections one by one, every spine binding, bound and assertion
file, every ontology binding. When it finds no error it runs the batch's setup itself
(`_batch_setup`), so "no errors" means a batch starts: what `load_pack` accepts is not
changed here, only reported better.

Warnings (a batch runs, but the gates can do little):

* `open-pool`      an object column whose pool class no disjointness or restriction
                   narrows: any member of the class passes, whatever the row says
* `unlabelled`     pool individuals without a label (cells must spell the IRI fragment)
* `no-key`         a spine table without a PRIMARY KEY or UNIQUE constraint
* `no-references`  prose is enabled but references/ holds no sample text
* `no-units`       a numeric data column no [[prose.quantities]] entry names: a number
                   the prose states about it cannot be checked
* `never-fires`    an assertion that can never return a row for this spine
* `dl-set-aside`   ontology triples set aside before reasoning, by reason, with counts and
                   examples (`ontology.normalise`; errors with `--strict-dl`)
* `import-skipped` an owl:imports the pack marks "skip", with what is lost
* `shapes-not-checked` SHACL the pack enables that VALUE_GATE does not check (rules, SPARQL,
                   logical or qualified shapes ...), counted by kind (`ontology.shapes`)
* `shape-unbound`  an enabled shape's path that no column of a table it targets binds
* `common-word`    an object column's class (not an entity column's) at least half of whose
                   members are spelled as ordinary English words ("white", "dry"): prose
                   reads "red meat" as a mention of one
"""

from __future__ import annotations

import re
import tempfile
import tomllib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import duckdb
from pydantic import BaseModel, ValidationError

from effectors.prose.exclude import Exclusions, common_word_labels
from effectors.ri_gate.assertions import parse_assertion
from effectors.ri_gate.bounds import _check_aggregate
from effectors.ri_gate.database import Database
from effectors.ri_gate.ddl import Schema, parse_spine
from effectors.ri_gate.pool_tables import create_pool_table
from effectors.ri_gate.staging import Layout
from harness.errors import MembraneError, PackError
from harness.pack import (
    SKIP_IMPORT,
    Bounds,
    ColumnBinding,
    OntologySettings,
    Pack,
    PackConfig,
    PackFiles,
    PackMeta,
    Policy,
    ProseQuantity,
    ProseRelation,
    ProseSettings,
    TableBinding,
    path_outside,
)
from harness.pools import Pools
from harness.saferegex import compile_safe
from harness.tomllines import KeyPath, key_lines, locate

__all__ = ["CheckReport", "Problem", "check_pack"]

Severity = Literal["error", "warning"]
_SECTIONS: dict[str, tuple[type[BaseModel] | None, bool]] = {
    "pack": (PackMeta, True),
    "files": (PackFiles, True),
    "ontology": (OntologySettings, True),
    "tables": (None, True),  # a table of TableBindings, checked one by one
    "prose": (ProseSettings, False),
    "policy": (Policy, False),
    "bounds": (Bounds, False),
}
_GUIDE = "see docs/how-to/write-a-pack.md and docs/reference/pack-toml.md"
_FIXES = {  # for the engines' PackErrors that carry no hint of their own
    "assertion": "fix that line of the assertion (header format: see "
    "docs/how-to/write-an-assertion.md); `-- severity:` is error, warn or info",
    "spine": "keep spine.sql to CREATE TABLE statements DuckDB parses",
    "ontology": "check it opens in Protégé and is consistent (HermiT)",
}


@dataclass(frozen=True)
class Problem:
    """One finding: what, where (file relative to the pack when inside it, 1-based line),
    and what to do."""

    severity: Severity
    code: str
    message: str
    file: str
    line: int | None = None
    fix: str = ""

    def render(self) -> str:
        where = self.file + (f":{self.line}" if self.line is not None else "")
        text = f"{where}: {self.severity}: {self.message}"
        return text + (f"\n  fix: {self.fix}" if self.fix else "")


@dataclass
class CheckReport:
    pack: Path
    problems: list[Problem] = field(default_factory=list)

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "warning"]

    def as_dict(self) -> dict[str, Any]:
        return {
            "pack": str(self.pack),
            "ok": not self.errors,
            "errors": len(self.errors),
            "warnings": len(self.warnings),
            "problems": [
                {"severity": p.severity, "code": p.code, "file": p.file, "line": p.line,
                 "message": p.message, "fix": p.fix}
                for p in self.problems
            ],
        }


def check_pack(path: Path | str, *, strict_dl: bool = False) -> CheckReport:
    """Check a pack folder (or its pack.toml); never raises for a bad pack. `strict_dl`:
    triples the ontology's normalisation would set aside (outside OWL 2 DL, or beyond
    owlready2) are errors, not warnings."""
    root = Path(path)
    if root.is_file() and root.name == "pack.toml":
        root = root.parent
    with tempfile.TemporaryDirectory(prefix="membrane-pack-check-") as cache:
        checker = _Checker(root.resolve(), Path(cache), strict_dl=strict_dl)
        checker.run()
    return checker.report


class _Checker:
    def __init__(self, root: Path, cache: Path, *, strict_dl: bool = False) -> None:
        self.root = root
        self.strict_dl = strict_dl
        self.toml = root / "pack.toml"
        self.report = CheckReport(pack=root)
        self.lines: dict[KeyPath, int] = {}
        self.parts: dict[str, Any] = {}
        self.schema: Schema | None = None
        self.pools: Pools | None = None
        self.cache = cache  # a throwaway classification cache (nothing is written to the pack)

    # -- recording --------------------------------------------------------------------------
    def _rel(self, file: Path | str | None) -> str:
        p = Path(file) if file is not None else self.toml
        try:
            return str(p.resolve().relative_to(self.root))
        except ValueError:
            return str(p)

    def add(self, severity: Severity, code: str, message: str, *, file: Path | str | None = None,
            line: int | None = None, loc: KeyPath | None = None, fix: str = "") -> None:
        if line is None and loc is not None and (file is None or Path(file) == self.toml):
            line = locate(self.lines, loc)
        problem = Problem(severity, code, message, self._rel(file), line, fix)
        if problem not in self.report.problems:
            self.report.problems.append(problem)

    def error(self, code: str, exc: PackError, loc: KeyPath | None = None) -> None:
        file = self._rel(exc.file)
        if any(p.message == exc.message and p.file == file for p in self.report.errors):
            return  # the batch's setup said again what a piece-wise check said
        self.add("error", code, exc.message, file=exc.file, line=exc.line, loc=loc,
                 fix=exc.hint or _FIXES.get(code, f"fix it ({_GUIDE})"))

    @contextmanager
    def _catch(self, code: str, loc: KeyPath | None = None) -> Iterator[None]:
        try:
            yield
        except PackError as exc:
            self.error(code, exc, loc)

    # -- the stages -------------------------------------------------------------------------
    def run(self) -> None:
        raw = self._read_toml()
        if raw is None:
            return
        config = self._config(raw)
        if self._outside():  # nothing outside the pack folder is read
            return
        self._files()
        self._spine()
        pack = self._pack(config)
        if pack is not None:
            self._ontology(pack)
            self._assertions(pack)
            self._warnings(pack)
            if not self.report.errors:
                self._batch_setup(pack)

    def _read_toml(self) -> dict[str, Any] | None:
        if not self.toml.is_file():
            self.add("error", "no-pack", "no pack.toml here", file=self.toml,
                     fix="give a pack folder (e.g. packs/facility), or create one with "
                     "`membrane pack new DIR`")
            return None
        try:
            text = self.toml.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            self.add("error", "toml-encoding", "pack.toml is not UTF-8 text", file=self.toml,
                     fix="save it as UTF-8")
            return None
        self.lines = key_lines(text)
        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            m = re.search(r"line (\d+)", str(exc))
            self.add("error", "toml-syntax", f"pack.toml does not parse: {exc}", file=self.toml,
                     line=int(m.group(1)) if m else None,
                     fix="fix the TOML syntax at that line (nothing else can be checked before)")
            return None

    def _validation(self, exc: ValidationError, prefix: KeyPath) -> None:
        for e in exc.errors():
            loc = (*prefix, *e["loc"])
            where = ".".join(str(p) for p in loc)
            kind = e["type"]
            if kind == "missing":
                fix = f"add `{loc[-1]}` ({_GUIDE})"
            elif kind == "extra_forbidden":
                fix = f"remove `{loc[-1]}` or correct its spelling: it is not a pack.toml key"
            else:
                fix = f"correct the value ({_GUIDE})"
            msg = str(e["msg"]).removeprefix("Value error, ")
            self.add("error", "toml-invalid", f"`{where}`: {msg}", loc=loc, fix=fix)

    def _config(self, raw: dict[str, Any]) -> PackConfig | None:
        for key in raw:
            if key not in _SECTIONS:
                self.add("error", "toml-invalid", f"unknown section [{key}]", loc=(key,),
                         fix=f"remove it or correct its name; sections: {', '.join(_SECTIONS)}")
        for name, (model, required) in _SECTIONS.items():
            if name not in raw:
                if required:
                    self.add("error", "toml-invalid", f"section [{name}] is missing", line=1,
                             fix=f"add a [{name}] section ({_GUIDE})")
                continue
            if model is not None:
                try:
                    self.parts[name] = model.model_validate(raw[name])
                except ValidationError as exc:
                    self._validation(exc, (name,))
        self._tables(raw.get("tables"))
        self._cross_references()
        if self.report.errors:
            return None
        try:
            return PackConfig.model_validate(raw)
        except ValidationError as exc:  # a rule the piece-wise checks above do not know
            self._validation(exc, ())
            return None

    def _tables(self, raw: Any) -> None:
        if raw is None:
            return
        if not isinstance(raw, dict) or not raw:
            self.add("error", "toml-invalid", "`tables`: bind at least one table",
                     loc=("tables",), fix="add a [tables.NAME] section with row_class, key "
                     "and columns")
            return
        tables: dict[str, TableBinding] = {}
        for name, binding in raw.items():
            try:
                tables[name] = TableBinding.model_validate(binding)
            except ValidationError as exc:
                self._validation(exc, ("tables", name))
                partial = _partial_table(binding)
                if partial is not None:  # the rest of it is still checked against the others
                    tables[name] = partial
        self.parts["tables"] = tables

    def _column(self, ref: str, kinds: tuple[str, ...]) -> bool:
        table, _, column = ref.partition(".")
        binding = self.parts.get("tables", {}).get(table)
        col = binding.columns.get(column) if binding else None
        return col is not None and col.kind in kinds

    def _cross_references(self) -> None:
        """PackConfig's model validators, one finding per reference instead of the first."""
        prose: ProseSettings | None = self.parts.get("prose")
        tables: dict[str, TableBinding] | None = self.parts.get("tables")
        policy: Policy | None = self.parts.get("policy")
        for i, pat in enumerate(policy.placeholder_patterns if policy else []):
            try:
                compile_safe(pat)
            except ValueError as exc:
                self.add("error", "toml-invalid", f"policy.placeholder_patterns: {exc}",
                         loc=("policy", "placeholder_patterns", i),
                         fix="write a regular expression RE2 accepts (no backreferences)")
        if prose is None or tables is None:
            return
        self._prose_columns(prose)
        units = {q.column for q in prose.quantities if q.units}
        for i, a in enumerate(prose.aggregates):
            table, _, column = (a.column or f"{a.table}.").partition(".")
            ok = table in tables and (not column or (
                column in tables[table].columns and (a.kind == "compare" or a.column in units)))
            if not ok:
                ref = (a.column or f"{a.table}.").rstrip(".")
                self.add("error", "toml-invalid", f"prose.aggregates: {ref!r} is not a bound "
                         "table or a [[prose.quantities]] column with units",
                         loc=("prose", "aggregates", i),
                         fix="name a bound table (count) or a quantity column with units")
        for ref in prose.entity_columns:
            table, _, column = ref.partition(".")
            if table not in tables or column not in tables[table].columns:
                self.add("error", "toml-invalid",
                         f"prose.entity_columns names {ref!r}, which no table binds",
                         loc=("prose", "entity_columns"), fix="name columns as TABLE.COLUMN")

    def _prose_columns(self, prose: ProseSettings) -> None:
        pairs: list[tuple[str, Sequence[ProseQuantity | ProseRelation], tuple[str, ...]]] = [
            ("quantities", prose.quantities, ("data",)),
            ("relations", prose.relations, ("object", "id")),
        ]
        for field_, items, kinds in pairs:
            for i, item in enumerate(items):
                if not self._column(item.column, kinds):
                    self.add("error", "toml-invalid",
                             f"prose.{field_} names {item.column!r}, which is not a bound "
                             f"{' or '.join(kinds)} column", loc=("prose", field_, i, "column"),
                             fix="name a column as TABLE.COLUMN of [tables]")
                for ref in item.through:
                    ok = self._column(ref, ("id",)) and (
                        ref.partition(".")[0] != item.column.partition(".")[0])
                    if not ok:
                        self.add("error", "toml-invalid",
                                 f"prose: {item.column!r} through {ref!r}: not an id column of "
                                 "another table", loc=("prose", field_, i, "through"),
                                 fix="`through` names id columns (TABLE.COLUMN) of other tables")

    def _outside(self) -> bool:
        """Paths that leave the pack folder (as `load_pack` refuses them); True if any."""
        files: PackFiles | None = self.parts.get("files")
        settings: OntologySettings | None = self.parts.get("ontology")
        named: list[tuple[KeyPath, str]] = [(("files", k), getattr(files, k)) for k in
                 ("ontology", "spine", "assertions", "references", "prompts", "chapter")
                 if files is not None and getattr(files, k) is not None]
        named += [(("ontology", "imports", iri), f) for iri, f in
                  (settings.imports if settings else {}).items() if f != SKIP_IMPORT]
        prose: ProseSettings | None = self.parts.get("prose")
        named += [(("prose", "fields", name, "references"), f.references) for name, f in
                  (prose.fields if prose else {}).items() if f.references is not None]
        root, found = self.root.resolve(), False
        for loc, value in named:
            why = path_outside(root, value)
            if why is not None:
                found = True
                where = ".".join(str(p) for p in loc[:-1])
                self.add("error", "file-outside", f"[{where}] {loc[-1]!s} = {value!r} {why}",
                         loc=loc, fix="name a file or folder inside the pack folder, "
                         "relative to it (copy the file in rather than linking to it)")
        folders = [self.root / getattr(files, k) for k in ("assertions", "references", "prompts")
                   if files is not None]
        folders += [self.root / str(value) for loc, value in named if loc[0] == "prose"]
        for folder in folders:
            if found or not folder.is_dir():
                continue
            for entry in sorted(folder.iterdir()):
                if path_outside(root, str(entry.relative_to(self.root))) is not None:
                    found = True
                    self.add("error", "file-outside", "a symbolic link to outside the pack "
                             "folder", file=entry, fix="replace the link with a copy of the file")
        return found

    def _files(self) -> None:
        files: PackFiles | None = self.parts.get("files")
        if files is None:
            return
        for label in ("ontology", "spine"):
            p = self.root / getattr(files, label)
            if not p.is_file():
                self.add("error", "file-missing",
                         f"the {label} file named in pack.toml does not exist ({p.name})",
                         loc=("files", label), fix=f"create it, or fix [files].{label}")
        if files.chapter is not None:
            p = (self.root / files.chapter).resolve()
            if not p.is_relative_to(self.root):
                self.add("error", "file-outside", "the chapter template must be inside the "
                         "pack folder", loc=("files", "chapter"), fix="fix [files].chapter")
            elif not p.is_file():
                self.add("error", "file-missing", "the chapter template named in pack.toml "
                         "does not exist", loc=("files", "chapter"), fix="fix [files].chapter")
        settings: OntologySettings | None = self.parts.get("ontology")
        for iri, file in (settings.imports if settings else {}).items():
            target = (self.root / file).resolve()
            usable = file == SKIP_IMPORT or (target.is_relative_to(self.root) and target.is_file())
            if ":" not in iri or not usable:
                self.add("error", "file-missing", f"[ontology.imports] maps {iri!r} to "
                         f"{file!r}: " + ("not an IRI" if ":" not in iri
                                          else "no such file in the pack folder"),
                         loc=("ontology", "imports", iri), fix="map each owl:imports IRI to "
                         "an ontology file inside the pack folder")
        for label in ("assertions", "references", "prompts"):
            p = self.root / getattr(files, label)
            if p.exists() and not p.is_dir():  # a batch reads nothing from it: no error
                self.add("warning", "not-a-folder", f"[files].{label} is not a folder: a "
                         "batch reads nothing from it", loc=("files", label),
                         fix=f"make {p.name} a folder, or fix [files]")

    def _spine(self) -> None:
        files: PackFiles | None = self.parts.get("files")
        if files is None or not (self.root / files.spine).is_file():
            return
        with self._catch("spine"):
            self.schema = parse_spine(self.root / files.spine)
        tables: dict[str, TableBinding] = self.parts.get("tables", {})
        schema = self.schema
        if schema is None:
            return
        spine = self.root / files.spine
        for table, binding in tables.items():
            if table not in schema.names:
                self.add("error", "spine-binding", f"pack.toml binds table {table!r}, which "
                         "the spine lacks", loc=("tables", table),
                         fix=f"add it to {spine.name} or unbind it")
                continue
            missing = [c for c in binding.columns if c not in schema.table(table).column_names]
            for c in missing:
                self.add("error", "spine-binding", f"pack.toml binds {table}.{c}, not in the "
                         "spine", loc=("tables", table, "columns", c),
                         fix=f"keep pack.toml and {spine.name} in step")
        bounds: Bounds | None = self.parts.get("bounds")
        for table in (bounds.rows if bounds else {}):
            if table not in schema.names:
                self.add("error", "bounds", f"bounds.rows names table {table!r}, "
                         "which the spine lacks", loc=("bounds", "rows", table),
                         fix=f"tables: {', '.join(schema.names)}")
        for i, b in enumerate(bounds.aggregate if bounds else []):
            problem = _check_aggregate(b, schema)
            if problem is not None:
                self.add("error", "bounds", problem, loc=("bounds", "aggregate", i),
                         fix="fix that [[bounds.aggregate]] entry")

    def _pack(self, config: PackConfig | None) -> Pack | None:
        """The pack to check the ontology and assertions of: the validated config, else
        one built from the sections that did validate (when those the checks need did)."""
        if config is not None:
            return Pack(root=self.root, config=config)
        if not all(k in self.parts for k in ("files", "ontology", "tables")):
            return None
        parts = {"pack": PackMeta(name="unnamed", version="0"), **self.parts}
        return Pack(root=self.root, config=PackConfig.model_construct(**parts))

    def _ontology(self, pack: Pack) -> None:
        from ontology import load_index, load_ontology
        from ontology.dl import check_simple_properties
        from ontology.lint import binding_problems

        if not pack.ontology_path.is_file():
            return
        try:
            loaded = load_ontology(pack.ontology_path, pack.ontology_imports)
        except PackError as exc:
            self.error("ontology", exc)
            return
        self._intake(pack, loaded.report)
        problems = binding_problems(pack, loaded)
        for problem in problems:
            self.error("ontology-binding", problem, _binding_loc(problem.message))
        try:
            check_simple_properties(loaded.ntriples(), pack.ontology_path)
        except PackError as exc:
            self.error("not-owl-dl", exc)
            return
        if problems:
            return
        try:
            index = load_index(pack, self.cache)[0]
            self.pools = index.pools
        except PackError as exc:
            loc: KeyPath | None = ("ontology", "aliases") if "aliases" in exc.message else None
            self.error("ontology", exc, loc)
            return
        self._shapes(pack, index)

    def _shapes(self, pack: Pack, index: Any) -> None:
        """What of the SHACL the pack enables VALUE_GATE checks, and what not (issue 27)."""
        from effectors.value_shapes import ValueShapes

        try:
            checked = ValueShapes.from_pack(pack, index)
        except PackError as exc:
            self.error("ontology", exc, ("ontology", "shape_files"))
            return
        if checked is None:
            return
        toml = pack.root / "pack.toml"
        skipped = checked.shapes.skipped
        if skipped:
            kinds = ", ".join(f"{n} with {why}" for why, n in skipped.most_common())
            self.add("warning", "shapes-not-checked", f"{sum(skipped.values())} shape(s) are "
                     f"not checked ({len(checked.shapes.constraints)} constraint(s) are): "
                     f"{kinds}", file=toml,
                     fix="nothing to do if the pack need not check them; else write the "
                     "constraint as a shape of a kind VALUE_GATE compiles, in shape_files")
        paths = sorted({(c.path, c.target) for c in checked.shapes.unbound})
        if paths:
            shown = "; ".join(f"<{p}> on <{t}>" for p, t in paths[:3])
            self.add("warning", "shape-unbound", f"{len(paths)} shape path(s) no column binds "
                     f"on the tables their shapes target, not checked: e.g. {shown}",
                     file=toml, fix="bind a column to the property if rows must satisfy it")

    def _intake(self, pack: Pack, report: Any) -> None:
        """The normalisation report (`ontology.normalise.IntakeReport`): triples set aside
        before reasoning, by reason, and imports skipped; errors with --strict-dl."""
        severity: Severity = "error" if self.strict_dl else "warning"
        for a in report.set_aside:
            self.add(severity, "dl-set-aside", f"{a.count} triple(s) set aside before "
                     f"reasoning ({report.kept} kept): {a.why}; e.g. "
                     + "; ".join(a.examples), file=pack.ontology_path,
                     fix=a.fix + ("" if self.strict_dl else
                                  " (--strict-dl refuses the pack instead)"))
        for skipped in report.skipped:
            self.add("warning", "import-skipped", f"owl:imports <{skipped.iri}> is skipped "
                     f'([ontology.imports] "skip"): lost {skipped.lost}', file=skipped.importer,
                     fix="map it to a local file if the pack needs its axioms")

    def _assertions(self, pack: Pack) -> None:
        if self.schema is None or not pack.assertions_dir.is_dir():
            return
        bound = set(pack.tables)
        try:
            # without the ontology's pools (its errors are reported) `_pool` is empty
            db = Database(Layout(self.schema), self.pools or Pools(ontology_hash=""))
        except MembraneError:
            return
        planner = _planner(Layout(self.schema), self.pools or Pools(ontology_hash=""))
        try:
            codes: dict[str, Path] = {}
            for path in pack.assertion_files():
                try:
                    a = parse_assertion(path, self.schema, db.con)
                except PackError as exc:
                    self.error("assertion", exc)
                    continue
                if a.code in codes:
                    self.add("error", "assertion", f"code {a.code!r} is used by more than "
                             f"one assertion ({codes[a.code].name} too)", file=path, line=1,
                             fix="give each assertion a code of its own")
                codes.setdefault(a.code, path)
                why = _never_fires(a.sql, a.table, self.schema, bound, planner)
                if why:
                    self.add("warning", "never-fires", f"assertion {a.code} can never "
                             f"return a row: {why}", file=path,
                             fix="check its FROM, JOIN and WHERE against spine.sql and "
                             "pack.toml's [tables]")
        finally:
            db.close()
            planner.close()

    def _warnings(self, pack: Pack) -> None:
        if self.schema is not None:
            for t in self.schema.tables:
                if not any(c.kind in ("primary_key", "unique") for c in t.constraints):
                    self.add("warning", "no-key", f"spine table {t.name!r} has no "
                             "PRIMARY KEY or UNIQUE constraint: duplicate rows pass",
                             file=pack.spine_path, line=_line_of(
                                 pack.spine_path, rf"(?i)create\s+table\s+\"?{t.name}\b"),
                             fix="declare its key column(s) PRIMARY KEY in the spine")
        prose = pack.config.prose
        if prose.enabled:
            if not pack.reference_texts():
                self.add("warning", "no-references", "prose is enabled but "
                         f"{pack.config.files.references}/ holds no sample text (*.txt): "
                         "the length band and the proposer's examples have nothing to go on",
                         loc=("prose", "enabled"), fix="add a few reference texts, or set "
                         "[prose] enabled = false")
            named = {q.column for q in prose.quantities}
            for table, binding in pack.tables.items():
                for column, col in binding.columns.items():
                    if col.kind != "data" or f"{table}.{column}" in named:
                        continue
                    if self._numeric(table, column):
                        self.add("warning", "no-units", f"{table}.{column} is a number "
                                 "no [[prose.quantities]] entry names: a value the prose "
                                 "states for it is not checked",
                                 loc=("tables", table, "columns", column),
                                 fix=f'add [[prose.quantities]] column = "{table}.{column}" '
                                 "with its units (or prefixes)")
            if self.pools is not None:
                self._common_words(pack, self.pools)
        if self.pools is not None:
            self._pool_warnings(pack, self.pools)

    def _common_words(self, pack: Pack, pools: Pools) -> None:
        """Classes of ordinary words (issue 21): the range of a bound object column, not one
        the prose must name (`entity_columns`), at least half of whose members are spelled
        as common English words ("white", "red", "dry"), so prose such as "red meat" reads
        as mentions of them. One warning per class, naming the words."""
        try:
            skip = Exclusions.of(pack, pools)
        except PackError:
            return  # a bad exclusion is reported as an error by the batch setup
        words: dict[str, list[str]] = {}
        for ind, text in common_word_labels(pools, skip):
            words.setdefault(ind, []).append(text)
        named = set(pack.config.prose.entity_columns)
        seen: set[str] = set()
        for table, binding in pack.tables.items():
            base = next((r for r in pools.row_rules
                         if r.base_class == binding.row_class and not r.when), None)
            for column, col in binding.columns.items():
                cls = base.require.get(col.property or "") if base else None
                if col.kind != "object" or cls is None or f"{table}.{column}" in named:
                    continue
                members = [m for m in pools.members(cls) if m not in skip.individuals]
                hits = [m for m in members if m in words]
                if cls in seen or not hits or 2 * len(hits) < len(members):
                    continue
                seen.add(cls)
                shown = ", ".join(f"{m} ({'/'.join(words[m])})" for m in hits[:10])
                self.add("warning", "common-word", f"{table}.{column}: {len(hits)} of the "
                         f"{len(members)} members of {cls} are spelled as ordinary English "
                         f"words: {shown}" + (" ..." if len(hits) > 10 else "")
                         + "; prose such as \"red meat\" reads as a mention of them (an "
                         "unknown entity when the tables do not hold it)",
                         loc=("tables", table, "columns", column),
                         fix=f'[prose] exclude_classes = ["{cls}"] (or those spellings in '
                         "exclude_labels), unless the prose is meant to name them")

    def _numeric(self, table: str, column: str) -> bool:
        if self.schema is None or table not in self.schema.names:
            return False
        cols = {c.name: c for c in self.schema.table(table).columns}
        return column in cols and cols[column].numeric_kind != "other"

    def _pool_warnings(self, pack: Any, pools: Pools) -> None:
        for frag, iris in pools.collisions.items():  # issue 27: no collision is silent
            ns = pack.config.ontology.namespace
            kept = (f"<{ns}{frag}> keeps the name {frag!r}, the others are named by IRI"
                    if ns + frag in iris else f"a cell saying {frag!r} is value.ambiguous")
            self.add("warning", "fragment-collision", f"{len(iris)} IRIs share the fragment "
                     f"{frag!r}: " + ", ".join(f"<{i}>" for i in iris) + f"; {kept}",
                     file=pack.ontology_path,
                     fix="write such cells as a prefixed name ([ontology] prefixes) or IRI")
        pool_classes: set[str] = set()
        for table, binding in pack.tables.items():
            rules = [r for r in pools.row_rules if r.base_class == binding.row_class]
            base = next((r for r in rules if not r.when), None)
            for column, col in binding.columns.items():
                if col.kind != "object" or col.property is None:
                    continue
                prop = col.property
                pool = base.require.get(prop) if base else None
                loc = ("tables", table, "columns", column)
                if pool is None:
                    self.add("warning", "open-pool", f"{table}.{column}: <{prop}> has "
                             "no range class: any individual of the ontology passes",
                             loc=loc, fix=f"declare a range for {prop} in the ontology")
                    continue
                pool_classes.add(pool)
                narrowed = any(prop in r.when or r.require.get(prop, pool) != pool
                               for r in rules if r.when)
                if not narrowed and not _split_pool(pools, pool):
                    self.add("warning", "open-pool", f"{table}.{column}: no "
                             f"disjointness or restriction narrows its pool {pool} "
                             f"({len(pools.members(pool))} members): any of them passes "
                             "whatever the row says", loc=loc,
                             fix=f"split {pool} into disjoint subclasses, or restrict "
                             f"{prop} (owl:allValuesFrom) on a row class that other cells "
                             "define")
        for pool in sorted(pool_classes):
            bare = [m for m in pools.members(pool) if not pools.individuals[m].labels]
            if bare:
                self.add("warning", "unlabelled", f"{len(bare)} individual(s) of pool "
                         f"{pool} have no label: {', '.join(bare[:5])}"
                         + (" ..." if len(bare) > 5 else ""), file=pack.ontology_path,
                         line=_line_of(pack.ontology_path, rf"#{re.escape(bare[0])}[\"'>]"),
                         fix="give each an rdfs:label (or skos:prefLabel) people write")

    def _batch_setup(self, pack: Pack) -> None:
        """What a batch does before its first artifact, with a throwaway cache: any
        PackError here is one the piece-wise checks missed (reported all the same)."""
        from effectors.registry import GateContext, build_gate
        from harness.chapters import ChapterRenderer
        from harness.pack import load_pack
        from ontology import check_ontology, load_pools

        with self._catch("batch-setup"):
            load_pack(self.root)
        with self._catch("batch-setup"):
            check_ontology(pack, self.cache)
            pools = load_pools(pack, self.cache)
            ctx = GateContext(pack=pack, pools=pools, cache_dir=self.cache)
            for name in ("value_gate", "ri_gate", "prose_gate"):
                gate = build_gate(name, ctx)
                close = getattr(gate, "close", None)
                if callable(close):
                    close()
            ChapterRenderer(pack)


def _partial_table(raw: Any) -> TableBinding | None:
    """The valid part of a table binding that failed validation: its row class and the
    columns that validate on their own (unvalidated otherwise, for later checks only)."""
    if not isinstance(raw, dict) or not isinstance(raw.get("row_class"), str):
        return None
    columns: dict[str, ColumnBinding] = {}
    for name, col in (raw.get("columns") or {}).items():
        try:
            columns[str(name)] = ColumnBinding.model_validate(col)
        except ValidationError:
            continue
    key = raw.get("key")
    return TableBinding.model_construct(
        row_class=raw["row_class"], key=key if isinstance(key, list) else [], columns=columns)


def _split_pool(pools: Pools, pool: str) -> bool:
    """Whether two subclasses of `pool` are entailed disjoint (members can clash)."""
    subs = [n for n, c in pools.classes.items() if pool in c.superclasses]
    return any(d in subs for s in subs for d in pools.classes[s].disjoint_with)


_BINDING = re.compile(r"^(?:table '(?P<t>[^']+)'|column (?P<tc>[^.\s]+)\.(?P<c>[^:\s]+))")


def _binding_loc(message: str) -> KeyPath | None:
    m = _BINDING.match(message)
    if not m:
        return None
    if m["t"]:
        return ("tables", m["t"], "row_class")
    return ("tables", m["tc"], "columns", m["c"])


def _line_of(path: Path, pattern: str) -> int | None:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    m = re.search(pattern, text)
    return text.count("\n", 0, m.start()) + 1 if m else None


def _planner(layout: Layout, pools: Pools) -> duckdb.DuckDBPyConnection:
    """An empty stage whose planner does not use the (empty) tables' statistics: it plans an
    assertion as an empty result only when its own predicates contradict each other."""
    con = duckdb.connect(":memory:", config={
        "enable_external_access": False, "threads": 1,
        "disabled_optimizers": "statistics_propagation"})
    con.execute(layout.create_sql())
    for t_idx in range(len(layout.schema.tables)):
        con.execute(layout.view_sql(t_idx))
    create_pool_table(con, pools)
    return con


def _never_fires(sql: str, header_table: str | None, schema: Schema, bound: set[str],
                 con: duckdb.DuckDBPyConnection) -> str | None:
    """Why an assertion can never return a row, or None: DuckDB plans it as an empty result,
    or every spine table it reads is one pack.toml does not bind (artifacts never fill it)."""
    try:
        plan = "\n".join(str(r[1]) for r in con.execute("EXPLAIN " + sql).fetchall())
    except duckdb.Error:
        plan = ""
    if re.search(r"(?i)empty[ _]result", plan):
        return "DuckDB plans it as an empty result (a WHERE or HAVING that is always false)"
    code = re.sub(r"--[^\n]*", " ", sql)
    read = [t for t in schema.names if re.search(rf"(?i)\b(from|join)\s+\"?{t}\b", code)]
    if read and not any(t in bound for t in read):
        return f"it reads only {', '.join(read)}, which pack.toml does not bind"
    if header_table is not None and header_table not in bound:
        return f"its `-- table: {header_table}` is a table pack.toml does not bind"
    return None
