"""`membrane pack derive`: bootstrap a value ontology from sample tables, every axiom gated.

From a pack's bindings and a sample corpus of good artifacts it writes a new pack whose
ontology has, for each bound object column, a pool class with one labelled individual per
value seen, and then proposes axioms by frequency analysis:

* `disjoint-pools`: the pools that share no value are declared pairwise disjoint;
* `partition A/B` (per table and pair of object columns): when the values of A and B fall
  into two or more groups that never co-occur in a row (connected components of the
  co-occurrence graph), each group becomes a class, the groups of a column are disjoint,
  and a row whose A value is in group k must have its B value in group k (and back):
  `R ≡ Row ⊓ ∃A.A_k`, `R ⊑ ∀B.B_k`.

A candidate is admitted only if HermiT finds the ontology with it consistent and every
sample artifact still passes the value gate; the others are listed (with why) for a
person. No model is asked (an LLM proposer of axioms is not part of this). Assertions
that read `_pool` name the source ontology's classes and are left out of the new pack.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from harness.corpus import read_corpus
from harness.errors import ConfigError, InfrastructureError, PackError
from harness.models import Artifact
from harness.pack import Pack, load_pack

__all__ = [
    "AxiomSource",
    "Candidate",
    "DeriveReport",
    "Derived",
    "SampleValues",
    "derive_ontology",
    "derive_pack",
]

ONTOLOGY_FILE = "ontology/derived.owl"
_XSD = "http://www.w3.org/2001/XMLSchema#"


@dataclass
class Candidate:
    name: str
    description: str
    owl: str  # RDF/XML elements added to the ontology when admitted
    admitted: bool = False
    why: str = ""
    source: str = "frequency"  # who proposed it: "frequency" (the analysis) or "llm"

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "source": self.source,
            "description": self.description,
            "admitted": self.admitted,
            "why": self.why,
        }


@dataclass
class DeriveReport:
    out: Path
    pools: dict[str, int] = field(default_factory=dict)  # pool class -> individuals
    candidates: list[Candidate] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)  # assertion files not copied
    llm_error: str = ""  # `--llm`: why the model gave no candidates

    def as_dict(self) -> dict[str, Any]:
        out = {
            "out": str(self.out),
            "pools": self.pools,
            "admitted": [c.as_dict() for c in self.candidates if c.admitted],
            "rejected": [c.as_dict() for c in self.candidates if not c.admitted],
            "assertions_left_out": self.left_out,
        }
        if self.llm_error:
            out["llm_error"] = self.llm_error
        return out


def _camel(name: str) -> str:
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    return "".join(p[:1].upper() + p[1:] for p in re.split(r"[^A-Za-z0-9]+", ascii_name) if p)


class _Names:
    """value -> a unique IRI fragment."""

    def __init__(self) -> None:
        self.of: dict[str, str] = {}
        self.used: set[str] = set()

    def __call__(self, value: str) -> str:
        if value not in self.of:
            base = re.sub(r"[^A-Za-z0-9]+", "_", value).strip("_") or "value"
            base = base if base[0].isalpha() else "v_" + base
            name, n = base, 1
            while name.lower() in self.used:  # lower case: IRIs stay apart on any file system
                n += 1
                name = f"{base}_{n}"
            self.used.add(name.lower())
            self.of[value] = name
        return self.of[value]


def _is_placeholder(pack: Pack, value: str) -> bool:
    from harness.saferegex import compile_safe

    policy = pack.config.policy
    if not value.strip() or value.strip().casefold() in {p.casefold() for p in policy.placeholders}:
        return True
    return any(compile_safe(p).search(value) for p in policy.placeholder_patterns)


@dataclass
class SampleValues:
    pack: Pack
    artifacts: list[Artifact]
    names: _Names = field(default_factory=_Names)
    pools: dict[tuple[str, str], str] = field(default_factory=dict)  # (table, col) -> class
    members: dict[str, set[str]] = field(default_factory=dict)  # class -> individuals
    labels: dict[str, str] = field(default_factory=dict)  # individual -> value

    def __post_init__(self) -> None:
        taken = {b.row_class.lower() for b in self.pack.tables.values()} | {
            (c.property or "").lower()
            for b in self.pack.tables.values()
            for c in b.columns.values()
        }
        for table, binding in self.pack.tables.items():
            for column, col in binding.columns.items():
                if col.kind != "object":
                    continue
                base = _camel(table) + _camel(column)  # "Pool" for names with no ASCII
                base = base if base[:1].isalpha() else "Pool" + base
                pool, n = base, 1
                while pool.lower() in taken:
                    n += 1
                    pool = f"{base}{n}"
                taken.add(pool.lower())
                self.pools[(table, column)] = pool
                self.members[pool] = set()
        self.names.used |= taken  # no individual is named like a class or a property
        for (table, column), pool in self.pools.items():
            for a in self.artifacts:
                for row in a.tables.get(table, []):
                    ind = self.individual(row.get(column))
                    if ind is not None:
                        self.members[pool].add(ind)

    def individual(self, value: object) -> str | None:
        if not isinstance(value, str) or _is_placeholder(self.pack, value):
            return None
        ind = self.names(value.strip())
        self.labels[ind] = value.strip()
        return ind

    def rows(self, table: str) -> list[dict[str, Any]]:
        return [row for a in self.artifacts for row in a.tables.get(table, [])]


def _base_owl(s: SampleValues) -> str:
    out: list[str] = []
    for table, binding in s.pack.tables.items():
        out.append(f'  <owl:Class rdf:about="#{binding.row_class}"/>')
        for column, col in binding.columns.items():
            if col.kind == "id" or col.property is None:
                continue
            if col.kind == "object":
                pool = s.pools[(table, column)]
                out.append(
                    f'  <owl:Class rdf:about="#{pool}"/>\n'
                    f'  <owl:ObjectProperty rdf:about="#{col.property}">\n'
                    f'    <rdfs:domain rdf:resource="#{binding.row_class}"/>\n'
                    f'    <rdfs:range rdf:resource="#{pool}"/>\n'
                    f"  </owl:ObjectProperty>"
                )
                continue
            values = [r.get(column) for r in s.rows(table) if r.get(column) is not None]
            numeric = (
                col.kind == "data"
                and values
                and all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)
            )
            rng = _XSD + ("decimal" if numeric else "string")
            out.append(
                f'  <owl:DatatypeProperty rdf:about="#{col.property}">\n'
                f'    <rdfs:domain rdf:resource="#{binding.row_class}"/>\n'
                f'    <rdfs:range rdf:resource="{rng}"/>\n'
                f"  </owl:DatatypeProperty>"
            )
    types: dict[str, list[str]] = {}
    for pool, inds in s.members.items():
        for ind in inds:
            types.setdefault(ind, []).append(pool)
    for ind in sorted(types):
        lines = [f'  <owl:NamedIndividual rdf:about="#{ind}">']
        lines += [f'    <rdf:type rdf:resource="#{p}"/>' for p in sorted(types[ind])]
        lines.append(f"    <rdfs:label>{escape(s.labels[ind])}</rdfs:label>")
        lines.append("  </owl:NamedIndividual>")
        out.append("\n".join(lines))
    if len(types) > 1:
        members = "\n".join(f'      <rdf:Description rdf:about="#{i}"/>' for i in sorted(types))
        out.append(
            '  <owl:AllDifferent>\n    <owl:distinctMembers rdf:parseType="Collection">'
            f"\n{members}\n    </owl:distinctMembers>\n  </owl:AllDifferent>"
        )
    return "\n".join(out)


def _all_disjoint(classes: list[str]) -> str:
    members = "\n".join(f'      <owl:Class rdf:about="#{c}"/>' for c in classes)
    return (
        '  <owl:AllDisjointClasses>\n    <owl:members rdf:parseType="Collection">\n'
        f"{members}\n    </owl:members>\n  </owl:AllDisjointClasses>"
    )


def _disjoint_pools(s: SampleValues) -> Candidate | None:
    chosen: list[str] = []
    for pool in sorted(s.members):
        if s.members[pool] and all(not (s.members[pool] & s.members[c]) for c in chosen):
            chosen.append(pool)
    if len(chosen) < 2:
        return None
    return Candidate(
        "disjoint-pools",
        f"pools that share no value are disjoint: {', '.join(chosen)}",
        _all_disjoint(chosen),
    )


def _components(pairs: set[tuple[str, str]]) -> list[tuple[set[str], set[str]]]:
    """Connected components of the bipartite graph of (a, b) pairs."""
    parent: dict[tuple[int, str], tuple[int, str]] = {}

    def find(x: tuple[int, str]) -> tuple[int, str]:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in pairs:
        ra, rb = find((0, a)), find((1, b))
        if ra != rb:
            parent[ra] = rb
    groups: dict[tuple[int, str], tuple[set[str], set[str]]] = {}
    for node in list(parent):
        side, name = node
        g = groups.setdefault(find(node), (set(), set()))
        g[side].add(name)
    return sorted(groups.values(), key=lambda g: (sorted(g[0]), sorted(g[1])))


def _partition(s: SampleValues, table: str, a: str, b: str) -> Candidate | None:
    binding = s.pack.tables[table]
    pa, pb = binding.columns[a].property, binding.columns[b].property
    pairs: set[tuple[str, str]] = set()
    for row in s.rows(table):
        ia, ib = s.individual(row.get(a)), s.individual(row.get(b))
        if ia is not None and ib is not None:
            pairs.add((ia, ib))
    groups = _components(pairs)
    if len(groups) < 2:
        return None
    pool_a, pool_b = s.pools[(table, a)], s.pools[(table, b)]
    out: list[str] = []
    names_a, names_b = [], []
    for k, (ga, gb) in enumerate(groups, start=1):
        ca, cb = f"{pool_a}_by_{pb}_{k}", f"{pool_b}_by_{pa}_{k}"  # names: IRI-safe
        names_a.append(ca)
        names_b.append(cb)
        out.append(
            f'  <owl:Class rdf:about="#{ca}"><rdfs:subClassOf rdf:resource="#{pool_a}"/>'
            "</owl:Class>"
        )
        out.append(
            f'  <owl:Class rdf:about="#{cb}"><rdfs:subClassOf rdf:resource="#{pool_b}"/>'
            "</owl:Class>"
        )
        out += [
            f'  <rdf:Description rdf:about="#{i}"><rdf:type rdf:resource="#{ca}"/>'
            "</rdf:Description>"
            for i in sorted(ga)
        ]
        out += [
            f'  <rdf:Description rdf:about="#{i}"><rdf:type rdf:resource="#{cb}"/>'
            "</rdf:Description>"
            for i in sorted(gb)
        ]
        for src, when, dst, prop in ((ca, pa, cb, pb), (cb, pb, ca, pa)):
            row_cls = f"{binding.row_class}_{src}"
            out.append(
                f'  <owl:Class rdf:about="#{row_cls}">\n    <owl:equivalentClass><owl:Class>'
                '<owl:intersectionOf rdf:parseType="Collection">\n'
                f'      <owl:Class rdf:about="#{binding.row_class}"/>\n'
                f'      <owl:Restriction><owl:onProperty rdf:resource="#{when}"/>'
                f'<owl:someValuesFrom rdf:resource="#{src}"/></owl:Restriction>\n'
                "    </owl:intersectionOf></owl:Class></owl:equivalentClass>\n"
                f'    <rdfs:subClassOf><owl:Restriction><owl:onProperty rdf:resource="#{prop}"/>'
                f'<owl:allValuesFrom rdf:resource="#{dst}"/></owl:Restriction></rdfs:subClassOf>\n'
                "  </owl:Class>"
            )
    out += [_all_disjoint(names_a), _all_disjoint(names_b)]
    sizes = ", ".join(f"{len(ga)}/{len(gb)}" for ga, gb in groups)
    return Candidate(
        f"partition {table}.{a}/{b}",
        f"{table}.{a} and {table}.{b} fall into {len(groups)} groups that never "
        f"share a row ({a}/{b} values per group: {sizes}): a row's {b} must be in "
        f"its {a}'s group and back",
        "\n".join(out),
    )


def _candidates(s: SampleValues) -> list[Candidate]:
    found = [c for c in [_disjoint_pools(s)] if c is not None]
    for table, binding in s.pack.tables.items():
        objects = [c for c, col in binding.columns.items() if col.kind == "object"]
        for a, b in combinations(objects, 2):
            cand = _partition(s, table, a, b)
            if cand is not None:
                found.append(cand)
    return found


def _ontology(s: SampleValues, namespace: str, parts: list[str]) -> str:
    base = namespace.rstrip("#")
    body = "\n".join([_base_owl(s), *parts])
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        "<!-- Derived by `membrane pack derive` from sample tables; every axiom below the\n"
        "     pools was admitted because HermiT found it consistent and every sample\n"
        "     artifact still passed the value gate (see derive.json). -->\n"
        f"<rdf:RDF\n    xmlns={quoteattr(namespace)}\n    xml:base={quoteattr(base)}\n"
        '    xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"\n'
        '    xmlns:rdfs="http://www.w3.org/2000/01/rdf-schema#"\n'
        '    xmlns:owl="http://www.w3.org/2002/07/owl#"\n'
        '    xmlns:xsd="http://www.w3.org/2001/XMLSchema#">\n'
        f"  <owl:Ontology rdf:about={quoteattr(base)}/>\n{body}\n</rdf:RDF>\n"
    )


def _pack_toml(source: Path, namespace: str) -> str:
    """The source's pack.toml with the derived ontology, its namespace, and no aliases or
    imports (they name the source ontology's individuals and files)."""
    out: list[str] = []
    section, skipping = "", False
    for line in source.read_text(encoding="utf-8").splitlines():
        stripped = line.strip()
        if stripped.startswith("["):
            section = stripped.split("#")[0].strip().strip("[]").strip()
            skipping = section in ("ontology.aliases", "ontology.imports")
        if skipping:
            continue
        if section == "files" and re.match(r"^\s*ontology\s*=", line):
            out.append(f'ontology = "{ONTOLOGY_FILE}"')
        elif section == "ontology" and re.match(r"^\s*namespace\s*=", line):
            out.append(f'namespace = "{namespace}"')
        elif not (section == "ontology" and re.match(r"^\s*(aliases|imports)\s*=", line)):
            out.append(line)
    return "\n".join(out) + "\n"


def _value_errors(pack: Pack, artifacts: list[Artifact], cache: Path) -> str | None:
    """The first value-gate error on the sample, or None (every artifact passes)."""
    from effectors.value_gate import ValueGate

    gate = ValueGate.from_pack(pack, cache)
    for a, v in zip(artifacts, gate.judge(artifacts), strict=True):
        for c in v.critiques:
            if c.severity == "error":
                cell = c.location.cell()
                return f"{a.id} would fail: {c.code} at {cell or c.location.table}"
    return None


@dataclass
class Derived:
    """What `derive_ontology` found: the sample's pools and every candidate, gated."""

    sample: SampleValues
    candidates: list[Candidate]
    llm_error: str = ""  # why the model gave no candidates (`--llm`), or ""


AxiomSource = Callable[[SampleValues], list[Candidate]]


def derive_ontology(
    bindings: Pack,
    artifacts: list[Artifact],
    derived: Path,
    namespace: str,
    *,
    candidates: list[Candidate] | None = None,
    extra: AxiomSource | None = None,
) -> Derived:
    """Write the ontology of the pack in `derived` (its pack.toml names it; `bindings` binds
    the same tables) from `artifacts`: the pools, then every candidate axiom admitted only if
    HermiT finds the ontology consistent and every artifact still passes the value gate.
    Candidates: `candidates`, else the frequency analysis's; then `extra`'s (an LLM's),
    through the same gate. A PackError when the pools alone do not admit the sample."""
    s = SampleValues(bindings, artifacts)
    if candidates is None:
        candidates = _candidates(s)
    llm_error = ""
    if extra is not None:
        try:
            candidates = [*candidates, *extra(s)]
        except InfrastructureError as exc:  # the model's endpoint failed: derive goes on
            llm_error = str(exc)
    pack = load_pack(derived)
    owl_path = pack.ontology_path
    owl_path.parent.mkdir(parents=True, exist_ok=True)
    admitted: list[str] = []
    with tempfile.TemporaryDirectory(prefix="membrane-derive-") as tmp:
        owl_path.write_text(_ontology(s, namespace, []), encoding="utf-8")
        why = _admit(pack, artifacts, Path(tmp))
        if why is not None:
            raise PackError(
                f"the pools alone do not admit the sample: {why}",
                file=owl_path,
                hint="derive from good artifacts only (no placeholders, every "
                "value spelled as it should be)",
            )
        for cand in candidates:
            if cand.why:  # refused before the gate (an LLM candidate naming unknown things)
                continue
            owl_path.write_text(_ontology(s, namespace, [*admitted, cand.owl]), "utf-8")
            cand.why = _admit(pack, artifacts, Path(tmp)) or ""
            cand.admitted = not cand.why
            if cand.admitted:
                admitted.append(cand.owl)
        owl_path.write_text(_ontology(s, namespace, admitted), encoding="utf-8")
    return Derived(s, candidates, llm_error)


def derive_pack(
    source: Path | str,
    sample: Path,
    out: Path,
    *,
    force: bool = False,
    limit: int | None = None,
    candidates: list[Candidate] | None = None,
    extra: AxiomSource | None = None,
) -> DeriveReport:
    """Write a pack in `out` with an ontology derived from `sample` under `source`'s
    bindings. Every candidate axiom (by default the frequency analysis's, in order, then
    `extra`'s) is admitted only if the ontology stays consistent (HermiT) and every sample
    artifact still passes the value gate."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())) and not force:
        raise ConfigError(
            "the folder is not empty", file=out, hint="give a new or empty folder, or --force"
        )
    pack = load_pack(source)
    read = read_corpus(sample, pack)
    if read.errors:
        raise read.errors[0]
    if limit is not None:
        if limit < 1:
            raise ConfigError(f"--limit {limit} is not a positive number")
        read.artifacts = read.artifacts[:limit]
    if not read.artifacts:
        raise ConfigError("the sample holds no artifact", file=sample)
    namespace = f"http://example.org/derived/{pack.name}#"
    out.mkdir(parents=True, exist_ok=True)
    report = DeriveReport(out=out)
    _copy_files(pack, out, report)
    (out / "pack.toml").write_text(_pack_toml(pack.root / "pack.toml", namespace), "utf-8")
    owl_path = out / ONTOLOGY_FILE
    owl_path.parent.mkdir(parents=True, exist_ok=True)
    owl_path.write_text("", encoding="utf-8")  # load_pack needs the file to exist
    found = derive_ontology(
        pack, read.artifacts, out, namespace, candidates=candidates, extra=extra
    )
    report.pools = {p: len(m) for p, m in sorted(found.sample.members.items())}
    report.candidates = found.candidates
    report.llm_error = found.llm_error
    (out / "derive.json").write_text(json.dumps(report.as_dict(), indent=2) + "\n", "utf-8")
    return report


def _admit(pack: Pack, artifacts: list[Artifact], cache: Path) -> str | None:
    try:
        return _value_errors(pack, artifacts, cache)
    except PackError as exc:  # an inconsistent ontology, an unsatisfiable row class
        return f"HermiT: {exc.message}"


def _copy_files(pack: Pack, out: Path, report: DeriveReport) -> None:
    shutil.copy2(pack.spine_path, out / pack.config.files.spine)
    for folder in (pack.references_dir, pack.prompts_dir):
        if folder.is_dir():
            shutil.copytree(folder, out / folder.relative_to(pack.root), dirs_exist_ok=True)
    if pack.config.files.chapter:
        dst = out / pack.config.files.chapter
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(pack.root / pack.config.files.chapter, dst)
    target = out / pack.config.files.assertions
    target.mkdir(parents=True, exist_ok=True)
    for path in pack.assertion_files():
        if re.search(r"\b_pool\b", path.read_text(encoding="utf-8")):
            report.left_out.append(path.name)
            continue
        shutil.copy2(path, target / path.name)
