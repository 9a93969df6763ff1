"""Issue 21: labels that are ordinary words ("white", "red") are read as entities in "serve
the whites cool" and "red meat"; a pack leaves classes or spellings out of prose matching
(`[prose] exclude_classes`, `exclude_labels`), and `common_word_labels` lists the labels a
pack may want to leave out."""

from __future__ import annotations

from pathlib import Path

import pytest

from effectors.prose.exclude import Exclusions, common_word_labels, common_words
from effectors.prose_gate import ProseGate
from harness.errors import PackError
from harness.pools import ClassInfo, IndividualInfo, Pools
from tests.conftest import ROOT
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


def _vino_with_prose(tmp_path: Path, exclude: str = "") -> Path:
    """The vino test pack with prose enabled (its colours, bodies and sugars are words)."""
    import shutil

    pack = tmp_path / "vino"
    shutil.copytree(ROOT / "tests" / "packs" / "vino", pack)
    toml = pack / "pack.toml"
    text = toml.read_text(encoding="utf-8").replace(
        "[prose]\nenabled = false", "[prose]\nenabled = true\n" + exclude)
    toml.write_text(text, encoding="utf-8")
    (pack / "references").mkdir(exist_ok=True)
    (pack / "references" / "one.txt").write_text("A red wine from Bordeaux.\n", "utf-8")
    return pack


@pytest.mark.java
def test_pack_check_warns_about_classes_of_common_words(tmp_path: Path) -> None:
    from harness.packcheck import check_pack

    report = check_pack(_vino_with_prose(tmp_path))
    assert not report.errors, [e.render() for e in report.errors]
    warned = {p.message.split(":")[0]: p for p in report.warnings if p.code == "common-word"}
    assert set(warned) == {"wines.colour", "wines.body", "wines.flavour", "wines.sugar"}
    colour = warned["wines.colour"]
    assert "Red (Red/red)" in colour.message and "White (White/white)" in colour.message
    assert 'exclude_classes = ["WineColor"]' in colour.fix and colour.file == "pack.toml"
    # grapes, regions and wineries are names, not words; nor do the shipped packs warn
    for pack in ("facility", "pizza"):
        assert not [p for p in check_pack(ROOT / "packs" / pack).warnings
                    if p.code == "common-word"]


@pytest.mark.java
def test_an_entity_column_is_meant_to_be_named_and_gets_no_warning(tmp_path: Path) -> None:
    from harness.packcheck import check_pack

    report = check_pack(_vino_with_prose(tmp_path, 'entity_columns = ["wines.colour"]\n'))
    assert not report.errors, [e.render() for e in report.errors]
    warned = {p.message.split(":")[0] for p in report.warnings if p.code == "common-word"}
    assert warned == {"wines.body", "wines.flavour", "wines.sugar"}


@pytest.mark.java
def test_excluded_classes_and_labels_leave_the_warning(tmp_path: Path) -> None:
    from harness.packcheck import check_pack

    exclude = ('exclude_classes = ["WineColor", "WineBody", "WineFlavor"]\n'
               'exclude_labels = ["dry", "Sweet"]\n')  # any case: both spellings of each
    report = check_pack(_vino_with_prose(tmp_path, exclude))
    assert not report.errors, [e.render() for e in report.errors]
    assert [p for p in report.warnings if p.code == "common-word"] == []
