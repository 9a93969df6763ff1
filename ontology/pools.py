"""Building (and caching) the `OntologyIndex` of a pack: one HermiT classification per content hash.

`build_index` loads the pack's OWL in a fresh World, checks the bindings (each table's
`row_class`, each column's `property`, of the right kind), classifies the ontology once
with HermiT — together with *probe* classes `N_C ≡ ¬C`, so that `X ⊑ N_C` in the
classification means "X is entailed disjoint with C" — and computes:

* `Pools`: every named individual (fragment, labels, entailed named types), every named
  class (entailed members, superclasses, disjoint classes) and the `row_rules`;
* the violation classes and datatype rules (`ontology.rules`).

Setup errors are `PackError`s naming the file and the IRI or axiom; an inconsistent base
ontology is one.
"""

from __future__ import annotations

import json
import stat
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import owlready2

from harness.errors import PackError
from harness.pack import Pack
from harness.pools import ClassInfo, IndividualInfo, Pools
from ontology import shared
from ontology.axioms import fragment
from ontology.classify import default_classifier
from ontology.diagnose import inconsistent_individuals
from ontology.dl import check_simple_properties
from ontology.independence import rows_independent
from ontology.index import CODE_VERSION, PROBE_NS, OntologyIndex
from ontology.load import LoadedOntology, load_ontology, ontology_hash
from ontology.nominals import different_pairs, enumerations, nominal_pairs
from ontology.reason import THING, TIMEOUT_ADVICE, Classification, HermitRunner, ReasonerTimeout
from ontology.rules import RuleBuilder
from ontology.warm import default_reasoner

__all__ = ["build_index", "check_ontology", "class_roots", "load_index", "load_pools"]

_RDFS_LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
_RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
_SKOS = "http://www.w3.org/2004/02/skos/core#"
_LABEL_PROPS = (_RDFS_LABEL, _SKOS + "prefLabel", _SKOS + "altLabel")


def _cache_key(pack: Pack) -> tuple[str, str]:
    bindings = json.dumps(
        {t: b.model_dump() for t, b in pack.tables.items()}, sort_keys=True
    )
    imports = pack.ontology_imports
    onto = ontology_hash(pack.ontology_path, imports=imports)
    salt = CODE_VERSION + bindings + pack.config.ontology.namespace
    key = ontology_hash(pack.ontology_path, salt, imports)
    return onto, key


# A cache entry read once a process (a session's pools and its value gate both load it;
# ~30 ms of JSON validation apiece): by the entry's path, key and files' (inode, size,
# mtime), the pack's folder and its [ontology] settings (what `_for_pack` reads beside
# the key).
_LOADED: dict[tuple[str, str, tuple[tuple[int, int, int], ...], str, str],
              tuple[OntologyIndex, str, str]] = {}
_MAX_LOADED = 8


def _stamps(paths: list[Path]) -> tuple[tuple[int, int, int], ...] | None:
    """(inode, size, mtime) of each file, or None when one is missing."""
    out: list[tuple[int, int, int]] = []
    for p in paths:
        try:
            st = p.stat()
        except OSError:
            return None
        if not stat.S_ISREG(st.st_mode):
            return None
        out.append((st.st_ino, st.st_size, st.st_mtime_ns))
    return tuple(out)


def load_index(
    pack: Pack, cache_dir: Path, runner: HermitRunner | None = None
) -> tuple[OntologyIndex, str, str]:
    """The pack's index plus the base and violation N-Triples, from cache or built once."""
    onto_hash, key = _cache_key(pack)
    paths = [cache_dir / f"ontology-{key[:32]}.{ext}" for ext in ("json", "base.nt", "viol.nt")]
    stamps = _stamps(paths)
    if stamps is None and shared.fetch(paths):  # another workspace classified it
        stamps = _stamps(paths)
    if stamps is not None:
        memo_key = (str(paths[0].resolve()), key, stamps, str(pack.root),
                    pack.config.ontology.model_dump_json())
        hit = _LOADED.get(memo_key)
        if hit is not None:
            return hit
        try:
            index = OntologyIndex.model_validate_json(paths[0].read_bytes())
            if index.key == key:
                loaded = (_for_pack(index, pack), paths[1].read_text("utf-8"),
                          paths[2].read_text("utf-8"))
                if len(_LOADED) >= _MAX_LOADED:
                    _LOADED.clear()
                _LOADED[memo_key] = loaded
                return loaded
        except ValueError:
            pass  # a stale or damaged cache entry: rebuild it
    timeout = pack.config.ontology.reasoner_timeout_s
    try:
        index, base_nt, viol_nt = build_index(
            pack, runner or default_classifier(timeout), onto_hash, key)  # warm: issue 27
    except ReasonerTimeout as exc:  # the pack's ontology, not a bug: a setup error (exit 2)
        raise PackError(
            f"HermiT did not classify the ontology within {exc.timeout_s:g} s "
            "(membrane classifies it once, then caches the result)",
            file=pack.ontology_path,
            hint=TIMEOUT_ADVICE,
        ) from exc
    cache_dir.mkdir(parents=True, exist_ok=True)
    texts = (index.model_dump_json(), base_nt, viol_nt)
    for path, text in [*zip(paths, texts, strict=True)][::-1]:  # the index last
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    shared.publish(paths)  # for the next workspace that needs it
    return _for_pack(index, pack), base_nt, viol_nt


def _for_pack(index: OntologyIndex, pack: Pack) -> OntologyIndex:
    """The index with the pack's matching rule, canonical form and aliases on its pools (the
    cache holds the ontology's facts only). An alias naming no individual is a PackError."""
    o = pack.config.ontology
    unknown = sorted(f"{a!r} = {ind!r}" for a, ind in o.aliases.items()
                     if ind not in index.pools.individuals)
    if unknown:
        raise PackError(
            f"[ontology] aliases {', '.join(unknown)} name no individual of the ontology",
            file=pack.root / "pack.toml",
            hint="an alias maps a spelling to an individual's IRI fragment",
        )
    pools = index.pools.with_pack(o.matching, o.canonical, o.aliases, o.prefixes,
                                  _mentionable(pack, index.pools),
                                  _mentionable_classes(pack, index.pools))
    return index if pools is index.pools else index.model_copy(update={"pools": pools})


def _mentionable(pack: Pack, pools: Pools) -> tuple[str, ...] | None:
    """The individuals the pack binds (members of its object columns' ranges), which prose
    may mention; None (all) when a bound object column has no range (issue 27: Brick's tags,
    units and quantity kinds are no prose entities of a register that binds none)."""
    ranges: set[str] = set()
    for binding in pack.tables.values():
        base = next((r for r in pools.row_rules
                     if r.base_class == binding.row_class and not r.when), None)
        for col in binding.columns.values():
            if col.kind != "object" or col.property is None:
                continue
            cls = base.require.get(col.property) if base else None
            if cls is None:
                return None
            ranges.add(cls)
    return tuple(sorted({m for c in ranges for m in pools.members(c)}))


def _mentionable_classes(pack: Pack, pools: Pools) -> tuple[str, ...]:
    """The classes the pack binds, which prose may mention (issue 27): those a class column
    may name (satisfiable, not deprecated, under its `root`). Classes under no declared
    root never are."""
    o = pack.config.ontology
    found: set[str] = set()
    for binding in pack.tables.values():
        for col in binding.columns.values():
            if col.kind != "class" or col.root is None:
                continue
            prefix, sep, local = col.root.partition(":")  # these pools know no prefixes yet
            name = o.prefixes[prefix] + local if sep and prefix in o.prefixes else col.root
            root = pools.root_class(name, o.namespace)
            if root is not None:
                found.update(pools.valid_classes(root))
    return tuple(sorted(found))


def index_cached(pack: Pack, cache_dir: Path) -> bool:
    """Whether the pack's classified index is in `cache_dir` or the per-user cache, so that
    `load_index` will not classify (a worker building its gates early asks first)."""
    _, key = _cache_key(pack)
    name = f"ontology-{key[:32]}.json"
    return (cache_dir / name).is_file() or shared.has(name)


def check_ontology(pack: Pack, cache_dir: Path) -> None:
    """Raise the `PackError`s of the pack's ontology that need no reasoner (it does not
    parse, a binding names no property of the right kind, it is not OWL 2 DL: a non-simple
    property in a cardinality restriction ...), writing nothing. A cached index passed
    these checks when it was built, so a cache hit returns at once. Call it before the
    workspace is created: `load_pools` would raise the same errors, but later."""
    _, key = _cache_key(pack)
    name = f"ontology-{key[:32]}.json"
    if (cache_dir / name).is_file() or shared.has(name):
        return
    memo = (str(pack.ontology_path), key)
    loaded = _CHECKED.get(memo) or load_ontology(pack.ontology_path, pack.ontology_imports)
    _CHECKED.clear()  # at most one World kept
    _check_bindings(pack, loaded)
    check_simple_properties(loaded.ntriples(), pack.ontology_path)
    _CHECKED[memo] = loaded


# The ontology the last `check_ontology` loaded, by its file and cache key (which hashes
# the bytes of it and of its imports): checked again (a batch checks before it takes the
# workspace's lock and once more when it opens its session) or classified by the
# `build_index` that follows it without loading the files again (one load, not three).
# `build_index` takes it out; nothing changes a World before that.
_CHECKED: dict[tuple[str, str], LoadedOntology] = {}


def load_pools(pack: Pack, cache_dir: Path) -> Pools:
    """The pools of the pack's ontology (classified once per content hash, cached as JSON)."""
    return load_index(pack, cache_dir)[0].pools


def build_index(
    pack: Pack, runner: HermitRunner, onto_hash: str, key: str
) -> tuple[OntologyIndex, str, str]:
    loaded = _CHECKED.pop((str(pack.ontology_path), key), None) or load_ontology(
        pack.ontology_path, pack.ontology_imports)
    row_classes, props = _check_bindings(pack, loaded)
    base_nt = loaded.ntriples()
    check_simple_properties(base_nt, pack.ontology_path)  # HermiT would fail with a trace
    classes = sorted(
        {str(c.iri) for c in loaded.world.classes() if not str(c.iri).startswith(PROBE_NS)}
    )
    result = runner.classify(base_nt)
    if result is None:
        culprits = inconsistent_individuals(base_nt, default_reasoner(runner.timeout_s))
        named = (": the assertions of " + ", ".join(f"<{c}>" for c in culprits)
                 + " contradict its axioms") if culprits else ""
        raise PackError(
            f"the base ontology is inconsistent (HermiT){named}: no artifact could ever pass",
            file=pack.ontology_path,
            hint="remove the contradictory axioms or individual types (Protégé's 'explain' helps)",
        )
    for table, cls in row_classes.items():
        if str(cls.iri) in result.unsatisfiable:
            raise PackError(
                f"the row class <{cls.iri}> of table {table!r} is unsatisfiable",
                file=pack.ontology_path,
            )
    pools = _pools(loaded, result, classes, onto_hash, pack.config.ontology.namespace, base_nt)
    builder = RuleBuilder(loaded.world, result, pools, row_classes, props)
    # Entailed disjointness: asserted disjointness closed downwards, plus, for the classes
    # rows require, every class HermiT puts under a probe `N_D ≡ ¬D` (a second call; probes
    # for *every* class make HermiT crawl on ontologies like Pizza).
    # A required class defined by a nominal (owl:oneOf) gets no probe: its members decide
    # (`ontology.nominals`; a complement of nominals is what makes HermiT crawl).
    required = sorted({v.required for v in builder.violations() if v.required_named})
    # pool key -> IRI (a fragment two classes share names the pack namespace's one)
    iris = {**{fragment(c): c for c in classes}, **{n: c.iri for n, c in pools.classes.items()}}
    cname = {c.iri: n for n, c in pools.classes.items()}.get
    iname = {i.iri: n for n, i in pools.individuals.items()}.get

    def class_key(iri: str) -> str:
        return cname(iri) or fragment(iri)

    def individual_key(iri: str) -> str:
        return iname(iri) or fragment(iri)

    enums = {c: m for c, m in enumerations(base_nt).items() if c in set(classes)}
    probes = [iris[r] for r in required if r in iris and iris[r] not in enums]
    probed = runner.classify(base_nt + _probe_triples(probes)) if probes else result
    if probed is None:  # cannot happen: probes are definitions of fresh names
        raise PackError("the base ontology is inconsistent with its probes",
                        file=pack.ontology_path)
    nominal = (enums, [iris[r] for r in required if r in iris and iris[r] in enums],
               different_pairs(base_nt) if enums else set())
    disjoint = _disjointness(loaded, result, classes, probed, probes, nominal, class_key)
    infos = {
        n: ci.model_copy(update={"disjoint_with": tuple(sorted(disjoint.get(n, set()) - {n}))})
        for n, ci in pools.classes.items()
    }
    same_as = _same_as(base_nt, set(pools.individuals), individual_key)
    people = {
        n: i.model_copy(update={"same_as": same_as.get(n, ())})
        for n, i in pools.individuals.items()
    }
    pools = Pools.model_validate({
        **pools.model_dump(), "classes": infos, "individuals": people,
        "row_rules": builder.row_rules(),
    })
    independent, note = rows_independent(
        base_nt, [str(p.iri) for p in props.values()],
        [class_key(str(c.iri)) for c in row_classes.values()], disjoint, class_key,
    )
    index = OntologyIndex(
        code_version=CODE_VERSION,
        key=key,
        ontology_file=str(pack.ontology_path),
        pools=pools,
        row_class_iris={t: str(c.iri) for t, c in row_classes.items()},
        property_iris={p.name: str(p.iri) for p in props.values()},
        individual_iris={**{fragment(i): i for i in _individuals(result, classes)},
                         **{n: i.iri for n, i in pools.individuals.items()}},
        violations=builder.violations(),
        data_rules=builder.data_rules(pack),
        definitions=builder.definitions,
        cardinalities=builder.cardinalities(),
        same_as=same_as,
        equivalents=_equivalents(result, set(classes), class_key),
        rows_independent=independent,
        independence_note=note,
    )
    return index, base_nt, builder.transform(base_nt)


def _lookup(loaded: LoadedOntology, namespace: str, name: str) -> Any:
    entity = loaded.world[namespace + name]
    if entity is not None:
        return entity
    hits = [e for e in loaded.world.search(iri=f"*{name}") if fragment(str(e.iri)) == name]
    return hits[0] if len(hits) == 1 else None


def _class_root(loaded: LoadedOntology, pack: Pack, root: str) -> str | None:
    """The IRI of a class column's `root` (full IRI, prefixed name or fragment), else None."""
    o = pack.config.ontology
    prefix, sep, local = root.partition(":")
    iri = o.prefixes[prefix] + local if sep and prefix in o.prefixes else None
    entity = loaded.world[iri or root] if (iri or "://" in root) else _lookup(
        loaded, o.namespace, root)
    return str(entity.iri) if isinstance(entity, owlready2.ThingClass) else None


def class_roots(pack: Pack, pools: Pools) -> dict[tuple[str, str], str]:
    """(table, column) -> the pool key of each class column's root."""
    out: dict[tuple[str, str], str] = {}
    for table, binding in pack.tables.items():
        for column, col in binding.columns.items():
            if col.kind == "class" and col.root is not None:
                key = pools.root_class(col.root, pack.config.ontology.namespace)
                if key is not None:
                    out[(table, column)] = key
    return out


def _check_bindings(pack: Pack, loaded: LoadedOntology) -> tuple[dict[str, Any], dict[str, Any]]:
    """Each table's row class and each bound column's property; the first binding problem
    raised (before a batch), `binding_problems` lists them all (for `pack check`)."""
    row_classes, props, problems = _bindings(pack, loaded)
    if problems:
        raise problems[0]
    return row_classes, props


def binding_problems(pack: Pack, loaded: LoadedOntology) -> list[PackError]:
    """Every binding problem at once, in the order `_check_bindings` meets them: each
    table's `row_class` a class, each bound column's `property` an object or data property
    of the right kind, a text column's range a string."""
    return _bindings(pack, loaded)[2]


def _bindings(
    pack: Pack, loaded: LoadedOntology
) -> tuple[dict[str, Any], dict[str, Any], list[PackError]]:
    ns = pack.config.ontology.namespace
    toml = pack.root / "pack.toml"
    row_classes: dict[str, Any] = {}
    props: dict[str, Any] = {}
    problems: list[PackError] = []
    for table, binding in pack.tables.items():
        cls = _lookup(loaded, ns, binding.row_class)
        if not isinstance(cls, owlready2.ThingClass):
            problems.append(PackError(
                f"table {table!r}: row_class <{ns}{binding.row_class}> is not a class of "
                f"{pack.ontology_path.name}",
                file=toml,
                hint="declare the class in the ontology or fix the binding",
            ))
        row_classes[table] = cls
        for column, col in binding.columns.items():
            if col.kind == "class" and col.root is not None:
                root = _class_root(loaded, pack, col.root)
                if root is None:
                    problems.append(PackError(
                        f"column {table}.{column}: root {col.root!r} is not a class of "
                        f"{pack.ontology_path.name}",
                        file=toml,
                        hint="name a class by its IRI fragment, full IRI or a prefixed name "
                             "whose prefix [ontology] prefixes declares",
                    ))
            if col.kind == "id" or col.property is None:
                continue
            prop = _lookup(loaded, ns, col.property)
            want = (owlready2.ObjectPropertyClass if col.kind == "object"
                    else owlready2.DataPropertyClass)
            if not isinstance(prop, want):
                what = "an object" if col.kind == "object" else "a data"
                problems.append(PackError(
                    f"column {table}.{column}: property <{ns}{col.property}> is not {what} "
                    f"property of {pack.ontology_path.name}",
                    file=toml,
                    hint="declare the property in the ontology or fix the binding",
                ))
                continue
            if col.kind == "text":
                try:
                    _check_text_range(prop, f"{table}.{column}", toml)
                except PackError as exc:
                    problems.append(exc)
            props[f"{table}.{column}"] = prop
    return row_classes, props, problems


_TEXT_RANGES = {"http://www.w3.org/2001/XMLSchema#string",
                "http://www.w3.org/2000/01/rdf-schema#Literal",
                "http://www.w3.org/1999/02/22-rdf-syntax-ns#PlainLiteral"}


def _check_text_range(prop: Any, where: str, toml: Path) -> None:
    """A `kind = "text"` column is free text: its property's range, if declared, must be
    xsd:string (or rdfs:Literal / rdf:PlainLiteral)."""
    world = prop.namespace.world
    rng = world._abbreviate("http://www.w3.org/2000/01/rdf-schema#range", False)
    declared = ([str(world._unabbreviate(o)) for o in world._get_obj_triples_sp_o(prop.storid, rng)]
                if rng is not None else [])
    bad = sorted({d for d in declared if d not in _TEXT_RANGES})
    if bad:
        raise PackError(
            f"column {where} is of kind \"text\" but <{prop.iri}> has range {', '.join(bad)}",
            file=toml,
            hint="bind free text to an xsd:string data property, or use kind = \"data\"",
        )


def _disjointness(
    loaded: LoadedOntology,
    result: Classification,
    classes: list[str],
    probed: Classification,
    probes: list[str],
    nominal: tuple[dict[str, tuple[str, ...]], list[str], set[frozenset[str]]] = ({}, [], set()),
    key: Callable[[str], str] = fragment,
) -> dict[str, set[str]]:
    """class key -> keys of the classes it is entailed disjoint with (`key`: IRI -> its key
    in the pools, the fragment unless two IRIs share it)."""
    below: dict[str, set[str]] = {c: set() for c in classes}
    for c in classes:
        for a in result.ancestors(c):
            below.setdefault(a, set()).add(c)
    out: dict[str, set[str]] = {}

    def mark(a: str, b: str) -> None:
        for x in below.get(a, {a}) | {a}:
            for y in below.get(b, {b}) | {b}:
                out.setdefault(key(x), set()).add(key(y))
                out.setdefault(key(y), set()).add(key(x))

    for a, b in _asserted_disjoint(loaded):
        mark(a, b)
    for i, d in enumerate(probes):
        probe = f"{PROBE_NS}{i}"
        for c in classes:
            if probe in probed.ancestors(c):
                mark(c, d)
    enums, required, different = nominal
    for a, b in nominal_pairs(enums, required, different, result.individual_types, out,
                              classes, key):
        mark(a, b)
    return out


def _asserted_disjoint(loaded: LoadedOntology) -> list[tuple[str, str]]:
    """Pairs of class IRIs an owl:disjointWith / AllDisjointClasses axiom names."""
    out: list[tuple[str, str]] = []
    for axiom in loaded.world.disjoint_classes():
        members = [str(e.iri) for e in axiom.entities if hasattr(e, "iri")]
        out += [(a, b) for i, a in enumerate(members) for b in members[i + 1:]]
    return out


def _same_as(
    base_nt: str, known: set[str], key: Callable[[str], str] = fragment
) -> dict[str, tuple[str, ...]]:
    """individual fragment -> the others it is asserted owl:sameAs (closed: sym., trans.)."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.setdefault(x, x) != x:
            x = parent[x]
        return x

    for line in base_nt.splitlines():
        parts = line.split(" ", 2)
        if len(parts) == 3 and parts[1] == "<http://www.w3.org/2002/07/owl#sameAs>":
            a, b = key(parts[0].strip("<>")), key(parts[2].rstrip(" .").strip("<>"))
            if a in known and b in known:
                parent[find(a)] = find(b)
    groups: dict[str, set[str]] = {}
    for x in parent:
        groups.setdefault(find(x), set()).add(x)
    return {x: tuple(sorted(g - {x})) for g in groups.values() if len(g) > 1 for x in g}


def _equivalents(
    result: Classification, named: set[str], key: Callable[[str], str] = fragment
) -> dict[str, tuple[str, ...]]:
    out: dict[str, tuple[str, ...]] = {}
    for c, eqs in result.equivalents.items():
        others = sorted({key(e) for e in eqs if e in named and e not in (c, THING)})
        if c in named and others:
            out[key(c)] = tuple(others)
    return out


def _probe_triples(classes: Iterable[str]) -> str:
    owl = "http://www.w3.org/2002/07/owl#"
    rdf_type = "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>"
    lines = []
    for i, iri in enumerate(classes):
        probe, node = f"<{PROBE_NS}{i}>", f"_:membraneProbe{i}"
        lines += [
            f"{probe} {rdf_type} <{owl}Class> .",
            f"{probe} <{owl}equivalentClass> {node} .",
            f"{node} {rdf_type} <{owl}Class> .",
            f"{node} <{owl}complementOf> <{iri}> .",
        ]
    return "\n" + "\n".join(lines) + "\n"


def _individuals(result: Classification, classes: list[str]) -> list[str]:
    skip = ("urn:membrane:",)
    return sorted(i for i in result.types if not i.startswith(skip))


def _typed_by_a_class(loaded: LoadedOntology, iri: str, named: set[str]) -> bool:
    """Whether the ontology asserts `iri rdf:type C` for a named class C (a pun on purpose)."""
    world = loaded.world
    storid = world._abbreviate(iri, False)
    rdf_type = world._abbreviate(_RDF_TYPE, False)
    if storid is None or rdf_type is None:
        return False
    return any(world._unabbreviate(o) in named
               for o in world._get_obj_triples_sp_o(storid, rdf_type) if o > 0)


def _labels(loaded: LoadedOntology, iri: str) -> tuple[str, ...]:
    world = loaded.world
    storid = world._abbreviate(iri, False)
    if storid is None:
        return ()
    out: list[str] = []
    for prop in _LABEL_PROPS:
        pid = world._abbreviate(prop, False)
        if pid is None:
            continue
        for value, _dtype in world._get_data_triples_sp_od(storid, pid):
            text = str(value).strip()
            if text and text not in out:
                out.append(text)
    return tuple(out)


def _keys(iris: Iterable[str], namespace: str) -> tuple[dict[str, str], dict[str, tuple[str, ...]]]:
    """IRI -> its key in the pools (its fragment, unless another IRI shares it: then the
    one in the pack's namespace keeps the fragment and every other is keyed by its IRI),
    and fragment -> the IRIs that share it (reported by `pack check`)."""
    groups: dict[str, list[str]] = {}
    for iri in iris:
        groups.setdefault(fragment(iri), []).append(iri)
    keys: dict[str, str] = {}
    collisions: dict[str, tuple[str, ...]] = {}
    for frag, group in groups.items():
        if len(group) > 1:
            collisions[frag] = tuple(sorted(group))
        for iri in group:
            keys[iri] = frag if len(group) == 1 or iri == namespace + frag else iri
    return keys, collisions


_OWL_DEPRECATED = "<http://www.w3.org/2002/07/owl#deprecated>"
_TRUE = ('"true"', '"1"')


def _deprecations(base_nt: str) -> tuple[set[str], dict[str, list[str]]]:
    """IRIs marked deprecated (`owl:deprecated true`, or a `deprecatedInVersion` annotation
    as Brick writes), and IRI -> the IRIs it `isReplacedBy` (dcterms:, Brick's or another
    vocabulary's property of that name), read from the N-Triples in one pass."""
    deprecated: set[str] = set()
    replaced: dict[str, list[str]] = {}
    for line in base_nt.splitlines():
        if "eprecat" not in line and "isReplacedBy" not in line:
            continue
        parts = line.split(" ", 2)
        if len(parts) != 3 or not parts[0].startswith("<"):
            continue
        subject, pred, obj = parts[0][1:-1], parts[1], parts[2].rstrip(" .")
        if pred == _OWL_DEPRECATED:
            if obj.startswith(_TRUE):
                deprecated.add(subject)
        elif pred.endswith(("#deprecatedInVersion>", "/deprecatedInVersion>")):
            deprecated.add(subject)
        elif pred.endswith(("#isReplacedBy>", "/isReplacedBy>")) and obj.startswith("<"):
            replaced.setdefault(subject, []).append(obj[1:-1])
    return deprecated, replaced


def _pools(
    loaded: LoadedOntology, result: Classification, classes: list[str], onto_hash: str,
    namespace: str = "", base_nt: str = "",
) -> Pools:
    named = set(classes)
    people = [iri for iri in _individuals(result, classes)
              if not (iri in named and not _typed_by_a_class(loaded, iri, named))]
    # (a class punned only by a property value is no individual: Brick's deprecatedInVersion)
    ind_keys, ind_collisions = _keys(people, namespace)
    cls_keys, cls_collisions = _keys(classes, namespace)
    deprecated, replaced = _deprecations(base_nt)

    def replacements(iri: str, keys: dict[str, str]) -> tuple[str, ...]:
        return tuple(keys.get(r, r) for r in replaced.get(iri, ()))

    individuals: dict[str, IndividualInfo] = {}
    members: dict[str, list[str]] = {cls_keys[c]: [] for c in classes}
    for iri in people:
        name = ind_keys[iri]
        types = sorted({cls_keys[t] for t in result.individual_types(iri) if t in named})
        individuals[name] = IndividualInfo(
            name=name, labels=_labels(loaded, iri), types=tuple(types), iri=iri,
            deprecated=iri in deprecated, replaced_by=replacements(iri, ind_keys))
        for t in types:
            members.setdefault(t, []).append(name)
    infos: dict[str, ClassInfo] = {}
    for iri in classes:
        name = cls_keys[iri]
        ancestors = result.ancestors(iri)
        supers = sorted({cls_keys[a] for a in ancestors if a in named and a != iri})
        infos[name] = ClassInfo(
            name=name,
            members=tuple(sorted(set(members.get(name, ())))),
            superclasses=tuple(s for s in supers if s != name),
            iri=iri, labels=_labels(loaded, iri), deprecated=iri in deprecated,
            replaced_by=replacements(iri, cls_keys), unsatisfiable=iri in result.unsatisfiable,
        )
    collisions = {f: tuple(sorted({*ind_collisions.get(f, ()), *cls_collisions.get(f, ())}))
                  for f in sorted({*ind_collisions, *cls_collisions})}
    return Pools(ontology_hash=onto_hash, individuals=individuals, classes=infos,
                 collisions=collisions)
