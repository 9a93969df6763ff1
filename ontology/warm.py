"""HermiT kept warm: the jar bundled with owlready2, called through its Java API in-process
(JPype), so a reasoner call costs tens of milliseconds instead of a JVM start (~0.6 s).

The JVM starts once per process (heap cap `-Xmx`, `-Xrs` so it leaves Python's signal
handling alone). Each base ontology is parsed once (OWL API, from its N-Triples) and kept
by content key; a call copies its axioms into a fresh ontology, adds the rows as class
and object-property assertions built with the data factory (no parsing), and asks a fresh
HermiT `Reasoner`. A call that runs past `timeout_s` is interrupted and, like any Java
exception or an exhausted heap, raises `InfrastructureError`: the gate fails closed.

**Only the part of the ABox a call's rows reach** (issue 22). A call with rows does not carry
the base's whole ABox: each base is split once (`_Split`) into its TBox and its assertions
indexed by individual, and a call gets the TBox, the assertions of the individuals connected
to its rows' values (through any assertion that names two individuals), and each
`DifferentIndividuals` cut down to those individuals. Without nominals, the universal role,
keys or rules, an interpretation may be the disjoint union of models of the ABox's connected
components, so the base plus the rows is consistent (or entails a row's type) exactly when
that part is (or does): the answers are the same. Only the cost changes: on the facility
pack, whose pools carry one `DifferentIndividuals` over all 179 individuals, a realisation
call with 2 rows went from ~150 to ~15 ms CPU, which was the fixed price every cohort paid
for its few new suspect rows. A base that does not qualify (`_Split.whole`: a nominal, a top
property, a key, a rule, an anonymous individual, or a base inconsistent on its own) and a
call without rows (the classification, the base-alone timeout check) use the whole base.

`default_reasoner()` returns a `WarmHermit` when JPype and a JVM are there, else the cold
`HermitRunner` (a JVM per call): same jar, same answers, only slower. Set
`MEMBRANE_REASONER=subprocess` to force the cold path.
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import owlready2

from harness.errors import InfrastructureError
from ontology import jvm_archive
from ontology.reason import (
    BaseOntology,
    HermitRunner,
    Reasoner,
    ReasonerTimeout,
    java_executable,
)
from ontology.render import RDF_TYPE, RowFacts

__all__ = ["WarmHermit", "default_reasoner", "warm_available"]

_HERMIT_DIR = Path(owlready2.__file__).resolve().parent / "hermit"
HERMIT_JAR = _HERMIT_DIR / "HermiT.jar"
_LOCK = threading.Lock()
_J: dict[str, Any] = {}  # Java classes, once the JVM is up
_MAX_BASES = 8


def _start_jvm(memory_mb: int) -> dict[str, Any]:
    """Start the JVM (once per process) and import the classes we call."""
    with _LOCK:
        if _J:
            return _J
        try:
            import jpype
        except ImportError as exc:  # pragma: no cover - JPype1 is a dependency
            raise InfrastructureError(f"the warm reasoner needs JPype1: {exc}") from exc
        try:
            if not jpype.isJVMStarted():
                java_executable()  # a clear message when there is no Java at all
                jvm = jvm_path()
                shared = jvm_archive.jvm_options(jvm, HERMIT_JAR)
                jpype.startJVM(
                    f"-Xmx{memory_mb}M", "-Xrs", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                    *shared,  # HermiT's classes mapped from an archive (ontology.jvm_archive)
                    jvmpath=jvm,
                    classpath=[str(HERMIT_JAR), str(_HERMIT_DIR)],
                    convertStrings=False, interrupt=False,
                )
            _J.update(
                manager=jpype.JClass("org.semanticweb.owlapi.apibinding.OWLManager"),
                source=jpype.JClass("org.semanticweb.owlapi.io.StringDocumentSource"),
                iri=jpype.JClass("org.semanticweb.owlapi.model.IRI"),
                reasoner=jpype.JClass("org.semanticweb.HermiT.Reasoner"),
                config=jpype.JClass("org.semanticweb.HermiT.Configuration"),
                hashset=jpype.JClass("java.util.HashSet"),
                exception=jpype.JException,
            )
        except InfrastructureError:
            raise
        except Exception as exc:
            raise InfrastructureError(f"cannot start the JVM for HermiT: {exc}") from exc
        return _J


def jvm_path() -> str | None:
    """The JVM library JPype starts (None: it finds none, and says so as it starts)."""
    import jpype

    try:
        return str(jpype.getDefaultJVMPath())
    except Exception:  # JVMNotFoundException and kin: startJVM raises the clear error
        return None


def warm_available() -> bool:
    """Can this process run the warm path (JPype importable and a JVM startable)?"""
    if os.environ.get("MEMBRANE_REASONER", "").lower() == "subprocess":
        return False
    try:
        _start_jvm(2000)
    except InfrastructureError:
        return False
    return True


# assertion axioms: indexed by the individuals they name (DifferentIndividuals apart)
_ABOX = frozenset({
    "ClassAssertion", "ObjectPropertyAssertion", "DataPropertyAssertion", "SameIndividual",
    "NegativeObjectPropertyAssertion", "NegativeDataPropertyAssertion",
})
# what couples individuals an assertion does not connect: the base is then used whole
_COUPLING = frozenset({"HasKey", "SWRLRule"})
_NOMINALS = frozenset({"ObjectOneOf", "ObjectHasValue"})


@dataclass
class _Split:
    """A base ontology cut for calls that carry only the ABox their rows reach (module
    docstring). `whole`: the base does not qualify; calls use every axiom."""

    whole: bool
    tbox: Any = None  # HashSet of the logical axioms that name no individual
    by_individual: dict[str, list[Any]] = field(default_factory=dict)  # IRI -> assertions
    neighbours: dict[str, set[str]] = field(default_factory=dict)  # named together
    different: list[list[Any]] = field(default_factory=list)  # DifferentIndividuals members


def _split(axioms: Any, hashset: Any) -> _Split:
    """Index `axioms` for `_Split`, or `_Split(whole=True)` when it cannot be cut."""
    tbox = hashset()
    by_individual: dict[str, list[Any]] = defaultdict(list)
    neighbours: dict[str, set[str]] = defaultdict(set)
    different: list[list[Any]] = []
    for ax in axioms:
        if not ax.isLogicalAxiom():
            continue  # annotations and declarations entail nothing
        kind = str(ax.getAxiomType())
        if kind in _COUPLING or ax.getAnonymousIndividuals().size() > 0:
            return _Split(whole=True)
        if any(p.isOWLTopObjectProperty() for p in ax.getObjectPropertiesInSignature()) or any(
            p.isOWLTopDataProperty() for p in ax.getDataPropertiesInSignature()
        ):
            return _Split(whole=True)
        if any(str(c.getClassExpressionType()) in _NOMINALS
               for c in ax.getNestedClassExpressions()):
            return _Split(whole=True)
        names = [str(i.toStringID()) for i in ax.getIndividualsInSignature()]
        if kind == "DifferentIndividuals":
            different.append(list(ax.getIndividualsAsList()))
        elif kind in _ABOX:
            for n in names:
                by_individual[n].append(ax)
                neighbours[n].update(names)
        elif names:  # an individual in a class axiom: a nominal by another name
            return _Split(whole=True)
        else:
            tbox.add(ax)
    return _Split(False, tbox, dict(by_individual), dict(neighbours), different)


class WarmHermit:
    """`Reasoner` on a warm in-process JVM. Counts its calls and the seconds spent.
    `whole_abox=True` gives every call the base's whole ABox (the reference for the cut)."""

    def __init__(
        self, timeout_s: float = 300.0, memory_mb: int = 2000, *, whole_abox: bool = False
    ) -> None:
        self.timeout_s = timeout_s
        self.memory_mb = memory_mb  # applies when this object starts the JVM
        self.whole_abox = whole_abox
        self.calls = 0
        self.seconds = 0.0
        self._j = _start_jvm(memory_mb)
        self._manager = self._j["manager"].createOWLOntologyManager()
        self._factory = self._manager.getOWLDataFactory()
        self._bases: OrderedDict[str, Any] = OrderedDict()  # key -> axiom set
        self._splits: OrderedDict[str, _Split] = OrderedDict()  # key -> the base, cut

    def prepare(self, *bases: BaseOntology) -> None:
        """Parse `bases`, run HermiT once on each (loads its classes) and cut each for calls
        with rows (`_split_of`); not counted as calls, so the first judged cohort does not
        pay for them."""
        calls, seconds = self.calls, self.seconds
        try:
            for base in bases:
                # cutting a base asks HermiT whether it is consistent on its own: that call
                # loads the classes (asking twice cost ~0.13 s of each process's start)
                if self.whole_abox or self._split_of(base).whole:
                    self._call(base, (), lambda r: r.isConsistent())
        finally:
            self.calls, self.seconds = calls, seconds

    # -- the Reasoner protocol ---------------------------------------------------------------
    def consistent(self, base: BaseOntology, rows: Sequence[RowFacts]) -> bool:
        return bool(self._call(base, rows, lambda r: r.isConsistent()))

    def instances(
        self, base: BaseOntology, rows: Sequence[RowFacts], classes: Sequence[str]
    ) -> dict[str, set[str]] | None:
        iri = self._j["iri"].create
        row_iris = {r.iri for r in rows}

        def ask(reasoner: Any) -> dict[str, set[str]] | None:
            if not reasoner.isConsistent():
                return None
            out: dict[str, set[str]] = {c: set() for c in classes}
            if len(rows) * len(classes) > 400:  # many rows: HermiT's instance retrieval
                for c in classes:
                    found = reasoner.getInstances(self._factory.getOWLClass(iri(c)), False)
                    names = {str(i.getIRI().toString()) for i in found.getFlattened()}
                    out[c] = names & row_iris
                return out
            for c in classes:  # few rows: one entailment test per (row, class)
                cls = self._factory.getOWLClass(iri(c))
                for r in rows:
                    ind = self._factory.getOWLNamedIndividual(iri(r.iri))
                    if reasoner.hasType(ind, cls, False):
                        out[c].add(r.iri)
            return out

        result: dict[str, set[str]] | None = self._call(base, rows, ask)
        return result

    # -- internals -------------------------------------------------------------------------
    def _call_axioms(self, base: BaseOntology, rows: Sequence[RowFacts]) -> Any:
        """The base's axioms a call with `rows` needs: the TBox and the ABox the rows reach
        (module docstring), or the whole base."""
        if not rows or self.whole_abox:
            return self._axioms(base)
        split = self._split_of(base)
        if split.whole:
            return self._axioms(base)
        seen: set[str] = set()
        stack = [v for r in rows for p, v in r.values if p != RDF_TYPE]
        while stack:
            name = stack.pop()
            if name not in seen:
                seen.add(name)
                stack.extend(split.neighbours.get(name, ()))
        out = self._j["hashset"](split.tbox)
        for name in seen:
            for ax in split.by_individual.get(name, ()):
                out.add(ax)
        for members in split.different:
            kept = self._j["hashset"]()
            for i in members:
                if str(i.toStringID()) in seen:
                    kept.add(i)
            if kept.size() > 1:
                out.add(self._factory.getOWLDifferentIndividualsAxiom(kept))
        return out

    def _split_of(self, base: BaseOntology) -> _Split:
        key = base.key or BaseOntology.of(base.nt).key
        if key in self._splits:
            self._splits.move_to_end(key)
            return self._splits[key]
        split = _split(self._axioms(base), self._j["hashset"])
        if not split.whole:  # a base inconsistent on its own: every answer from the whole
            calls, seconds = self.calls, self.seconds
            try:
                split.whole = not self._call(base, (), lambda r: r.isConsistent())
            finally:
                self.calls, self.seconds = calls, seconds
        self._splits[key] = split
        while len(self._splits) > _MAX_BASES:
            self._splits.popitem(last=False)
        return split

    def _axioms(self, base: BaseOntology) -> Any:
        key = base.key or BaseOntology.of(base.nt).key
        if key in self._bases:
            self._bases.move_to_end(key)
            return self._bases[key]
        ont = self._manager.loadOntologyFromOntologyDocument(self._j["source"](base.nt))
        axioms = self._j["hashset"](ont.getAxioms())
        self._manager.removeOntology(ont)
        self._bases[key] = axioms
        while len(self._bases) > _MAX_BASES:
            self._bases.popitem(last=False)
        return axioms

    def _row_axioms(self, rows: Sequence[RowFacts]) -> Any:
        f, iri = self._factory, self._j["iri"].create
        out = self._j["hashset"]()
        classes: dict[str, Any] = {}
        props: dict[str, Any] = {}
        inds: dict[str, Any] = {}

        def ind(name: str) -> Any:
            if name not in inds:
                inds[name] = f.getOWLNamedIndividual(iri(name))
            return inds[name]

        for r in rows:
            subject = ind(r.iri)
            if r.row_class not in classes:
                classes[r.row_class] = f.getOWLClass(iri(r.row_class))
            out.add(f.getOWLClassAssertionAxiom(classes[r.row_class], subject))
            for p, v in r.values:
                if p == RDF_TYPE:  # a class-valued cell types the row (issue 27)
                    if v not in classes:
                        classes[v] = f.getOWLClass(iri(v))
                    out.add(f.getOWLClassAssertionAxiom(classes[v], subject))
                    continue
                if p not in props:
                    props[p] = f.getOWLObjectProperty(iri(p))
                out.add(f.getOWLObjectPropertyAssertionAxiom(props[p], subject, ind(v)))
        return out

    def _call(self, base: BaseOntology, rows: Sequence[RowFacts], ask: Any) -> Any:
        t0 = time.perf_counter()
        self.calls += 1
        ont = None
        timer: threading.Timer | None = None
        try:
            ont = self._manager.createOntology(self._call_axioms(base, rows))
            self._manager.addAxioms(ont, self._row_axioms(rows))
            config = self._j["config"]()
            config.throwInconsistentOntologyException = False
            reasoner = self._j["reasoner"](config, ont)
            timer = threading.Timer(self.timeout_s, reasoner.interrupt)
            timer.daemon = True
            timer.start()
            try:
                answer = ask(reasoner)
            finally:
                timer.cancel()
                reasoner.dispose()
        except self._j["exception"] as exc:
            if "Interrupted" in type(exc).__name__:
                raise ReasonerTimeout(self.timeout_s) from exc
            raise InfrastructureError(_java_failure(exc, self.memory_mb, self.timeout_s)) from exc
        finally:
            if ont is not None:
                self._manager.removeOntology(ont)
            elapsed = time.perf_counter() - t0
            self.seconds += elapsed
        if elapsed > self.timeout_s:
            raise ReasonerTimeout(self.timeout_s)
        return answer


def _java_failure(exc: Exception, memory_mb: int, timeout_s: float) -> str:
    name = type(exc).__name__
    if "OutOfMemoryError" in name or "OutOfMemoryError" in str(exc):
        return f"HermiT ran out of memory (-Xmx{memory_mb}M); judge smaller cohorts"
    if "Interrupted" in name:
        return f"HermiT did not answer within {timeout_s:g} s; nothing was admitted"
    return f"HermiT failed: {name}: {str(exc)[:500]}"


def default_reasoner(timeout_s: float = 300.0, memory_mb: int = 2000) -> Reasoner:
    """The warm in-process HermiT when available, else the cold subprocess `HermitRunner`."""
    if warm_available():
        return WarmHermit(timeout_s, memory_mb)
    return HermitRunner(timeout_s=timeout_s, memory_mb=memory_mb)
