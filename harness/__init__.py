"""membrane: the agent proposes; the membrane disposes.

`harness/` holds two layers (enforced by the import contract in pyproject.toml, run by
`make lint` and `tests/test_layers.py`):

* the **kernel**, which effectors import: `models`, `errors`, `pack`, `pools`, `corpus`,
  `workspace`, `ledger`, `store` (content-addressed objects, the view, recovery),
  `scratch`, `trace/`, `fsm` (the only importer of transitions), `agenda` (with `rules/`,
  the only importers of durable), `ports` (the protocols the loop runs effectors through),
  `diagram`, `canonical`, `normalize`; it imports no effector, no ontology code and nothing
  of the application;
* the **application** on top: `run` (a run, its engines and the facts the agenda sees),
  `loop` (one cohort cycle, through ports only), `driver`
  (`BatchRun`), `api` (one function per command; builds engines from the registry),
  `report`, `inspect`, `cli` and `commands`.

Between them sit `ontology/` (the only importer of owlready2) and `effectors/` (gates,
proposers, critique, commit, the registry), which import the kernel only.
"""

__version__ = "0.1.0"
