"""Issue 21: labels that are ordinary words ("white", "red") are read as entities in "serve
the whites cool" and "red meat"; a pack leaves classes or spellings out of prose matching
(`[prose] exclude_classes`, `exclude_labels`), and `common_word_labels` lists the labels a
pack may want to leave out."""

from __future__ import annotations

import pytest

from effectors.prose.exclude import Exclusions, common_word_labels, common_words
from effectors.prose_gate import ProseGate
from harness.errors import PackError
from harness.pools import ClassInfo, IndividualInfo, Pools
from tests.effectors.test_prose_gate import GOOD_PROSE, make_artifact, make_pack, make_pools

WINE_PROSE = GOOD_PROSE + " Serve the whites cool; the reds suit red meat."


def _wine_pools() -> Pools:
    """The facility-like pools with a wine colour class whose labels are ordinary words."""
    base = make_pools()
    colours = {"White": "white", "Red": "red", "Rose": "Rosé"}
    individuals = dict(base.individuals)
    for name, label in colours.items():
        individuals[name] = IndividualInfo(name=name, labels=(label,), types=("WineColor",))
    classes = dict(base.classes)
    classes["WineColor"] = ClassInfo(name="WineColor", members=tuple(sorted(colours)))
    return Pools.model_validate({**base.model_dump(), "individuals": individuals,
                                 "classes": classes})


def _unknown(gate: ProseGate, prose: str) -> list[str]:
    (v,) = gate.judge([make_artifact(prose)])
    return sorted(c.observed or "" for c in v.critiques if c.code == "prose.unknown_entity")


def test_without_exclusions_ordinary_words_are_unknown_entities() -> None:
    gate = ProseGate(make_pack(references=False), _wine_pools())
    assert _unknown(gate, WINE_PROSE) == ["Red", "White"]


def test_excluding_a_class_leaves_its_members_out_of_prose_matching() -> None:
    gate = ProseGate(make_pack(references=False, exclude_classes=["WineColor"]), _wine_pools())
    assert _unknown(gate, WINE_PROSE) == []
    # the rest of the vocabulary is still matched
    assert _unknown(gate, WINE_PROSE + " An MRI scanner is planned.") == ["mri_scanner"]


def test_excluding_labels_leaves_those_spellings_out_in_any_case_and_plural() -> None:
    gate = ProseGate(make_pack(references=False, exclude_labels=["White", "RED"]),
                     _wine_pools())
    assert _unknown(gate, WINE_PROSE) == []
    assert _unknown(gate, WINE_PROSE + " A Rosé is served.") == ["Rose"]


@pytest.mark.parametrize(("key", "value"), [("exclude_classes", ["WineColour"]),
                                            ("exclude_labels", ["whyte"])])
def test_a_name_the_ontology_does_not_have_is_a_setup_error(key: str, value: list[str]) -> None:
    with pytest.raises(PackError) as err:
        ProseGate(make_pack(references=False, **{key: value}), _wine_pools())
    assert f"prose.{key}" in str(err.value) and str(err.value.file).endswith("pack.toml")


def test_common_word_labels_lists_ordinary_words_not_names() -> None:
    pools = _wine_pools()
    found = common_word_labels(pools)
    names = {ind for ind, _ in found}
    assert {"White", "Red", "carrier"} <= names  # "white", "red", "Carrier"
    assert not names & {"siemens_healthineers", "ct_scanner", "ASHRAE_62_1", "mri_scanner"}
    assert ("Rose", "Rosé") in found  # read as "rose" (accents are dropped in matching)
    skip = Exclusions(labels=frozenset({"white"}), individuals=frozenset({"Red"}))
    left = {ind for ind, _ in common_word_labels(pools, skip)}
    assert "White" not in left and "Red" not in left and "carrier" in left


def test_the_common_word_list_is_plain_words() -> None:
    words = common_words()
    assert 4000 <= len(words) <= 5000 and {"white", "red", "cool"} <= words
    assert all(w.isascii() and w.isalpha() for w in words)
