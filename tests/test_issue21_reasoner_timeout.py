"""Issue 21: the reasoner timeout is the pack's (`[ontology] reasoner_timeout_s`), and HermiT
not classifying the ontology in time is a setup error with advice (exit 2), not an internal
error (exit 1)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.cli import main
from harness.errors import InfrastructureError
from harness.pack import load_pack
from ontology.reason import HermitRunner, ReasonerTimeout
from tests.conftest import FACILITY


def _pack(tmp_path: Path, timeout: float) -> Path:
    d = tmp_path / "pack"
    shutil.copytree(FACILITY, d, ignore=shutil.ignore_patterns("corpus", "__pycache__"))
    toml = d / "pack.toml"
    text = toml.read_text(encoding="utf-8")
    toml.write_text(text.replace("[ontology]\n", f"[ontology]\nreasoner_timeout_s = {timeout}\n",
                                 1), encoding="utf-8")
    return d


def test_the_timeout_is_a_pack_setting(tmp_path: Path) -> None:
    assert load_pack(FACILITY).config.ontology.reasoner_timeout_s == 300.0
    assert load_pack(_pack(tmp_path, 42)).config.ontology.reasoner_timeout_s == 42.0


@pytest.mark.java
def test_a_reasoner_timeout_is_an_infrastructure_error_that_names_the_setting() -> None:
    with pytest.raises(ReasonerTimeout) as err:
        HermitRunner(timeout_s=0.01).classify("")
    assert isinstance(err.value, InfrastructureError)
    assert "reasoner_timeout_s" in str(err.value)


@pytest.mark.java
def test_an_ontology_hermit_cannot_classify_in_time_is_a_setup_error_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pack = _pack(tmp_path, 0.01)
    corpus = tmp_path / "one.jsonl"
    corpus.write_text((FACILITY / "corpus" / "demo.jsonl").read_text(encoding="utf-8")
                      .splitlines()[0] + "\n", encoding="utf-8")
    code = main(["batch", str(corpus), "--pack", str(pack), "-w", str(tmp_path / "ws"),
                 "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "facility.owl" in err and "reasoner_timeout_s" in err
    assert "internal error" not in err


@pytest.mark.java
def test_a_timeout_while_judging_fails_the_runs_with_the_advice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The classification is cached (same ontology, another timeout): the cohort check times
    out, the runs end FAILED, and the summary names the setting (`[ontology]` shown as text)."""
    lines = (FACILITY / "corpus" / "demo.jsonl").read_text(encoding="utf-8").splitlines()
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    one.write_text(lines[0] + "\n", encoding="utf-8")
    two.write_text(lines[1] + "\n", encoding="utf-8")
    ws = str(tmp_path / "ws")
    assert main(["batch", str(one), "--pack", str(FACILITY), "-w", ws, "--no-progress",
                 "--no-report"]) == 0
    capsys.readouterr()
    pack = _pack(tmp_path, 0.01)
    code = main(["batch", str(two), "--pack", str(pack), "-w", ws, "--no-progress",
                 "--no-report", "--strict"])
    out = capsys.readouterr().out
    assert code == 3
    assert "FAILED" in out and "reasoner_timeout_s` under [ontology]" in " ".join(out.split())
