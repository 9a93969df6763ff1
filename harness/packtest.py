"""`membrane pack test DIR`: the pack's own examples through the real gates, like `dbt test`.

Each line of `DIR/tests/*.jsonl` is one case (strict JSON, untrusted input):

    {"name": "CT scanner with an HVAC standard",
     "artifact": {"id": "t-01", "tables": {...}, "prose": "..."},
     "expect": [{"code": "value.disjoint", "cell": "equipment[0].standard"}]}

`expect` lists the critiques the artifact must get: a `code`, and optionally where, as a
`cell` ("table[row].column"; "table[row]" for a row, "prose" for the text) or a `table`.
An empty list (or none) says it must pass every gate. A case fails when an expected
critique is not reported or an error is reported that no expectation names; warnings no
expectation names are shown, never a failure.

Every gate judges every case (unlike a run, which stops at the first gate that fails),
in the loop's order: VALUE_GATE, its canonical cells applied, RI_GATE, then PROSE_GATE
when `[prose] enabled`. The ontology is classified into a throwaway cache.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from harness.canonical import apply_canonical
from harness.corpus import MAX_LINE_BYTES, check_against_pack, load_json
from harness.errors import CorpusError
from harness.models import Artifact, Critique, Location
from harness.pack import Pack, load_pack

__all__ = ["CaseResult", "Expect", "Observed", "TestReport", "read_cases", "run_pack_tests"]

TESTS_DIR = "tests"


class Expect(BaseModel):
    """One critique a case must get."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    code: str = Field(min_length=1)
    cell: str | None = None  # "table[row].column", "table[row]" or "prose"
    table: str | None = None

    @model_validator(mode="after")
    def _one_place(self) -> Expect:
        if self.cell is not None and self.table is not None:
            raise ValueError("give `cell` or `table`, not both")
        return self

    def matches(self, o: Observed) -> bool:
        if o.code != self.code:
            return False
        if self.cell is not None:
            return o.where == self.cell
        if self.table is not None:
            return o.table == self.table
        return True

    def text(self) -> str:
        place = self.cell or self.table
        return self.code + (f" at {place}" if place else "")


class Case(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = ""
    artifact: Artifact
    expect: list[Expect] = Field(default_factory=list)


@dataclass(frozen=True)
class Observed:
    code: str
    severity: str
    gate: str
    where: str  # as an expectation's `cell` spells it ("" for the whole artifact)
    table: str | None
    message: str

    def text(self) -> str:
        place = f" at {self.where}" if self.where else ""
        return f"{self.code}{place} ({self.severity}, {self.gate}): {self.message[:160]}"


@dataclass(frozen=True)
class CaseSource:
    file: Path
    line: int
    case: Case


@dataclass
class CaseResult:
    file: str
    line: int
    name: str
    artifact: str
    missing: list[Expect] = field(default_factory=list)
    unexpected: list[Observed] = field(default_factory=list)
    got: list[Observed] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.missing and not self.unexpected

    def as_dict(self) -> dict[str, Any]:
        def obs(o: Observed) -> dict[str, Any]:
            return {"code": o.code, "severity": o.severity, "gate": o.gate,
                    "where": o.where, "message": o.message}

        return {"file": self.file, "line": self.line, "name": self.name,
                "artifact": self.artifact, "ok": self.ok,
                "missing": [e.model_dump(exclude_none=True) for e in self.missing],
                "unexpected": [obs(o) for o in self.unexpected],
                "got": [obs(o) for o in self.got]}

    def diff(self) -> list[str]:
        lines = [f"  - expected {e.text()}: not reported" for e in self.missing]
        lines += [f"  + unexpected {o.text()}" for o in self.unexpected]
        if self.missing:
            lines += [f"    got {o.text()}" for o in self.got if o not in self.unexpected]
        return lines


@dataclass
class TestReport:
    __test__ = False  # not a pytest class

    pack: Path
    results: list[CaseResult] = field(default_factory=list)

    @property
    def failed(self) -> list[CaseResult]:
        return [r for r in self.results if not r.ok]

    def as_dict(self) -> dict[str, Any]:
        return {"pack": str(self.pack), "cases": len(self.results),
                "passed": len(self.results) - len(self.failed), "failed": len(self.failed),
                "results": [r.as_dict() for r in self.results]}


def _where(loc: Location) -> str:
    if loc.table is not None and loc.row is not None and loc.column is not None:
        return f"{loc.table}[{loc.row}].{loc.column}"
    if loc.table is not None and loc.row is not None:
        return f"{loc.table}[{loc.row}]"
    if loc.table is not None:
        return loc.table
    return "prose" if loc.span is not None else ""


def _observed(c: Critique) -> Observed:
    return Observed(c.code, c.severity, c.gate, _where(c.location), c.location.table,
                    c.message)


def read_cases(pack: Pack) -> list[CaseSource]:
    """Every case of the pack's tests/*.jsonl; a bad line is a `CorpusError` (file:line)."""
    folder = pack.root / TESTS_DIR
    files = sorted(folder.glob("*.jsonl")) if folder.is_dir() else []
    if not files:
        raise CorpusError("the pack has no tests", file=folder,
                          hint="add tests/*.jsonl: one {\"name\", \"artifact\", \"expect\"} a "
                          "line (`membrane pack new` writes two)")
    cases: list[CaseSource] = []
    ids: dict[str, str] = {}
    for path in files:
        with open(path, "rb") as fh:
            for lineno, raw in enumerate(fh, start=1):
                if not raw.strip():
                    continue
                if len(raw) > MAX_LINE_BYTES:
                    raise CorpusError(f"line is {len(raw)} bytes (max {MAX_LINE_BYTES})",
                                      file=path, line=lineno)
                case = _case(load_json(raw, path, lineno), pack, path, lineno)
                where = f"{path.name}:{lineno}"
                if case.artifact.id in ids:
                    raise CorpusError(f"artifact id {case.artifact.id!r} is used again (first "
                                      f"in {ids[case.artifact.id]})", file=path, line=lineno,
                                      hint="give each case's artifact an id of its own")
                ids[case.artifact.id] = where
                cases.append(CaseSource(path, lineno, case))
    return cases


def _case(payload: Any, pack: Pack, path: Path, line: int) -> Case:
    try:
        case = Case.model_validate(payload)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise CorpusError(f"invalid test case at `{where}`: {first['msg']}", file=path,
                          line=line, hint='each line: {"name": ..., "artifact": {"id", '
                          '"tables", "prose"}, "expect": [{"code": ..., "cell": ...}]}') from exc
    problem = check_against_pack(case.artifact, pack)
    if problem:
        raise CorpusError(f"artifact {case.artifact.id!r}: {problem}", file=path, line=line,
                          hint="a test artifact has the pack's tables and columns")
    return case


def judge(pack: Pack, artifacts: Sequence[Artifact], cache: Path) -> list[list[Observed]]:
    """Every gate's critiques of each artifact (the loop's order; canonical cells applied);
    a gate that crashed on an artifact is a `crashed` error."""
    from effectors.registry import GateContext, build_gate
    from ontology import load_pools

    pools = load_pools(pack, cache)
    ctx = GateContext(pack=pack, pools=pools, cache_dir=cache)
    names = ["value_gate", "ri_gate"] + (["prose_gate"] if pack.config.prose.enabled else [])
    current = list(artifacts)
    found: list[list[Observed]] = [[] for _ in current]
    for name in names:
        gate = build_gate(name, ctx)
        try:
            verdicts = gate.judge(current)
        finally:
            close = getattr(gate, "close", None)
            if callable(close):
                close()
        for i, v in enumerate(verdicts):
            found[i] += [_observed(c) for c in v.critiques if c.severity != "info"]
            if v.crashed:
                found[i].append(Observed("crashed", "error", name, "", None,
                                         "the gate crashed on this artifact"))
            if v.canonical:
                current[i] = apply_canonical(current[i], v.canonical)
    return found


def run_pack_tests(path: Path | str) -> TestReport:
    """Run the pack's tests; bad pack or test input raises a `SetupError` (exit 2)."""
    pack = load_pack(path)
    cases = read_cases(pack)
    with tempfile.TemporaryDirectory(prefix="membrane-pack-test-") as cache:
        observed = judge(pack, [c.case.artifact for c in cases], Path(cache))
    report = TestReport(pack=pack.root)
    for src, got in zip(cases, observed, strict=True):
        expect = src.case.expect
        result = CaseResult(
            file=str(src.file.relative_to(pack.root)), line=src.line,
            name=src.case.name or src.case.artifact.id, artifact=src.case.artifact.id,
            missing=[e for e in expect if not any(e.matches(o) for o in got)],
            unexpected=[o for o in got if o.severity == "error"
                        and not any(e.matches(o) for e in expect)],
            got=got,
        )
        report.results.append(result)
    return report
