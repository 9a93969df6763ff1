"""Issue 22: a warm HermiT call carries the TBox and only the ABox its rows reach
(`ontology.warm`, `_Split`), and answers exactly as the call with the whole base does."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.corpus import adversarial, artifacts
from effectors.value_gate import ValueGate
from harness.pack import load_pack
from ontology.reason import BaseOntology
from ontology.render import RowFacts
from ontology.warm import WarmHermit
from tests.conftest import FACILITY

pytestmark = pytest.mark.java

NS = "http://membrane.dev/tests/cut#"
_T = "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>"
_OWL = "http://www.w3.org/2002/07/owl#"
_RDFS = "http://www.w3.org/2000/01/rdf-schema#"


def _nt(*triples: tuple[str, str, str]) -> str:
    return "".join(f"{s} {p} {o} .\n" for s, p, o in triples)


def _iri(name: str) -> str:
    return f"<{NS}{name}>"


def _base(extra: str = "") -> BaseOntology:
    """Row ⊑ ∀hasContact.¬Bad, Bad ≡ ∃knows.Evil; x knows y, y is Evil (so x is Bad, which
    only the assertion on y, two steps from a row, tells); z is harmless; x, y, z different."""
    restriction, bad_def, not_bad = "_:r", "_:b", "_:n"
    nt = _nt(
        (_iri("Row"), _T, f"<{_OWL}Class>"),
        (_iri("Bad"), _T, f"<{_OWL}Class>"),
        (_iri("Evil"), _T, f"<{_OWL}Class>"),
        (_iri("hasContact"), _T, f"<{_OWL}ObjectProperty>"),
        (_iri("knows"), _T, f"<{_OWL}ObjectProperty>"),
        (not_bad, _T, f"<{_OWL}Class>"),
        (not_bad, f"<{_OWL}complementOf>", _iri("Bad")),
        (restriction, _T, f"<{_OWL}Restriction>"),
        (restriction, f"<{_OWL}onProperty>", _iri("hasContact")),
        (restriction, f"<{_OWL}allValuesFrom>", not_bad),
        (_iri("Row"), f"<{_RDFS}subClassOf>", restriction),
        (bad_def, _T, f"<{_OWL}Restriction>"),
        (bad_def, f"<{_OWL}onProperty>", _iri("knows")),
        (bad_def, f"<{_OWL}someValuesFrom>", _iri("Evil")),
        (_iri("Bad"), f"<{_OWL}equivalentClass>", bad_def),
        *((_iri(n), _T, f"<{_OWL}NamedIndividual>") for n in ("x", "y", "z")),
        (_iri("x"), _iri("knows"), _iri("y")),
        (_iri("y"), _T, _iri("Evil")),
        ("_:d", _T, f"<{_OWL}AllDifferent>"),
        ("_:d", f"<{_OWL}distinctMembers>", "_:l1"),
        ("_:l1", "<http://www.w3.org/1999/02/22-rdf-syntax-ns#first>", _iri("x")),
        ("_:l1", "<http://www.w3.org/1999/02/22-rdf-syntax-ns#rest>", "_:l2"),
        ("_:l2", "<http://www.w3.org/1999/02/22-rdf-syntax-ns#first>", _iri("y")),
        ("_:l2", "<http://www.w3.org/1999/02/22-rdf-syntax-ns#rest>", "_:l3"),
        ("_:l3", "<http://www.w3.org/1999/02/22-rdf-syntax-ns#first>", _iri("z")),
        (
            "_:l3",
            "<http://www.w3.org/1999/02/22-rdf-syntax-ns#rest>",
            "<http://www.w3.org/1999/02/22-rdf-syntax-ns#nil>",
        ),
    )
    return BaseOntology.of(nt + extra)


def _row(value: str, row: int = 0) -> RowFacts:
    return RowFacts(0, "t", 0, row, f"{NS}Row", ((f"{NS}hasContact", f"{NS}{value}"),))


def test_an_assertion_two_steps_from_the_row_is_in_the_call() -> None:
    cut, whole = WarmHermit(), WarmHermit(whole_abox=True)
    base = _base()
    for runner in (cut, whole):
        assert runner.consistent(base, [_row("z")])
        assert not runner.consistent(base, [_row("x")])  # x knows y, y is Evil: x is Bad
        assert runner.consistent(base, [_row("y")])  # y knows no one
        assert not runner.consistent(base, [_row("z"), _row("x", 1)])
    split = cut._split_of(base)
    assert not split.whole
    axioms = cut._call_axioms(base, [_row("x")])
    assert axioms.size() < cut._axioms(base).size()  # z's assertions stay out
    assert "z" not in str(axioms) and "Evil" in str(axioms)


def test_a_nominal_keeps_the_whole_base() -> None:
    one_of = _nt(
        (_iri("Listed"), _T, f"<{_OWL}Class>"),
        (_iri("Listed"), f"<{_OWL}oneOf>", "_:o1"),
        ("_:o1", "<http://www.w3.org/1999/02/22-rdf-syntax-ns#first>", _iri("z")),
        (
            "_:o1",
            "<http://www.w3.org/1999/02/22-rdf-syntax-ns#rest>",
            "<http://www.w3.org/1999/02/22-rdf-syntax-ns#nil>",
        ),
    )
    runner = WarmHermit()
    base = _base(one_of)
    assert runner._split_of(base).whole
    assert runner._call_axioms(base, [_row("z")]).size() == runner._axioms(base).size()


def test_a_base_inconsistent_alone_keeps_the_whole_base() -> None:
    runner = WarmHermit()
    base = _base(_nt((_iri("z"), _T, _iri("Row")), (_iri("z"), _iri("hasContact"), _iri("x"))))
    assert runner._split_of(base).whole
    assert not runner.consistent(base, [_row("z")])  # as the whole base says


@pytest.mark.slow  # ~15 s at load 10
def test_the_value_gate_gives_the_same_verdicts_with_the_cut(tmp_path: Path) -> None:
    pack = load_pack(FACILITY)
    corpus = [*artifacts(60, 0.2), *adversarial(6, rows=4)]
    cut = ValueGate.from_pack(pack, tmp_path, WarmHermit())
    whole = ValueGate.from_pack(pack, tmp_path, WarmHermit(whole_abox=True))
    assert not cut.runner._split_of(cut._violation).whole  # type: ignore[attr-defined]
    for i in range(0, len(corpus), 16):  # cohorts, as a batch judges them
        assert cut.judge(corpus[i : i + 16]) == whole.judge(corpus[i : i + 16])
