"""The scaffold tools for LLM proposers, by function calling.

The three scaffold functions of `effectors/scaffold.py` as tools a model can call:

* `synth_column`  admissible values for object cells of one column, drawn from the pool of
                  the class each cell must belong to (the pack's ontology decides)
* `rebuild_table` the rows of one table with unique keys and no dangling foreign keys
* `draft_prose`   prose drafted from the tables, written to pass the prose gate

Every tool works on a *draft*: the candidate's tables, or the tables the model passes in
the optional `tables` argument (its work in progress). Tools never change the candidate
and never judge or commit anything; what they return is a suggestion the model may copy
into its answer, which the gates then judge like any other proposal.

    tools = ScaffoldTools.for_request(pack, pools, request, seed=seed)
    payload["tools"] = tools.openai_tools()          # OpenAI chat-completions `tools`
    reply = tools.dispatch("synth_column", '{"table": "equipment", "column": "standard"}')

`dispatch` (raw JSON arguments) and `call` (parsed arguments, e.g. hermes-agent's handlers)
always return a JSON string: the result, or `{"error": "..."}` for bad arguments or a
failing tool. They never raise for anything the model sends.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from effectors.prose.matcher import EntityMatcher
from effectors.scaffold import draft_prose, rebuild_table, synth_column
from harness.models import Artifact, Cell, ProposalRequest
from harness.pack import Pack
from harness.pools import Pools

__all__ = [
    "MAX_ARGUMENT_CHARS",
    "MAX_RESULT_CHARS",
    "TOOL_NAMES",
    "ScaffoldTools",
    "function_schemas",
    "openai_tools",
]

TOOL_NAMES: Final = ("synth_column", "rebuild_table", "draft_prose")
MAX_ARGUMENT_CHARS: Final = 1_000_000  # a tool call's JSON arguments
MAX_RESULT_CHARS: Final = 200_000  # a tool message sent back to the model
_NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


class _Args(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    tables: dict[str, list[dict[str, Cell]]] | None = None


class _SynthArgs(_Args):
    table: str
    column: str
    rows: list[int] | None = Field(default=None, max_length=10_000)
    within: str | None = None


class _RebuildArgs(_Args):
    table: str


class _DraftArgs(_Args):
    pass


_TABLES_DOC = (
    "Optional: your current draft of every table (same shape as the candidate's tables). "
    "Default: the candidate's tables."
)


def function_schemas(pack: Pack) -> list[dict[str, Any]]:
    """The tools as bare function schemas (`name`, `description`, `parameters`), as
    hermes-agent's tool registry and OpenAI's `function` field take them."""
    table_names = sorted(pack.tables)
    object_columns = sorted(
        {c for b in pack.tables.values() for c, col in b.columns.items() if col.kind == "object"}
    )
    tables_param: dict[str, Any] = {
        "type": "object",
        "description": _TABLES_DOC,
        "additionalProperties": {"type": "array", "items": {"type": "object"}},
    }
    schemas = [
        {
            "name": "synth_column",
            "description": (
                "Admissible values for the object cells of one column, drawn from the pool of "
                "the class each cell must belong to given the row's other cells. Returns "
                '{"values": {"<row index>": "<label>"}}; rows with no admissible value are left '
                "out. Copy the values you want into your answer."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "table": {"type": "string", "enum": table_names},
                    "column": {
                        "type": "string",
                        "enum": object_columns,
                        "description": "an object column of that table",
                    },
                    "rows": {
                        "type": "array",
                        "items": {"type": "integer", "minimum": 0},
                        "description": "0-based row indexes (default: every row)",
                    },
                    "within": {
                        "type": "string",
                        "description": "optional ontology class to draw from (e.g. a critique's "
                        "`expected`)",
                    },
                    "tables": tables_param,
                },
                "required": ["table", "column"],
                "additionalProperties": False,
            },
        },
        {
            "name": "rebuild_table",
            "description": (
                "The rows of one table with unique primary keys (later duplicates get a fresh "
                "key) and every foreign key pointing at an existing row. Returns "
                '{"rows": [...]}.'
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "table": {"type": "string", "enum": table_names},
                    "tables": tables_param,
                },
                "required": ["table"],
                "additionalProperties": False,
            },
        },
        {
            "name": "draft_prose",
            "description": (
                "Prose drafted from the tables that names every key entity by its label and no "
                'entity outside the tables. Returns {"prose": "..."}.'
            ),
            "parameters": {
                "type": "object",
                "properties": {"tables": tables_param},
                "additionalProperties": False,
            },
        },
    ]
    assert all(_NAME_RE.match(str(s["name"])) for s in schemas)
    return schemas


def openai_tools(pack: Pack) -> list[dict[str, Any]]:
    """The tools in the chat-completions `tools` format."""
    return [{"type": "function", "function": s} for s in function_schemas(pack)]


class ScaffoldTools:
    """The scaffold tools bound to one proposal request's candidate.

    `seed` makes every choice deterministic (use `f"{seed}:{attempt}"` as the offline
    proposer does). `calls` records the name of every tool call, good or bad, in order.
    """

    def __init__(
        self,
        pack: Pack,
        pools: Pools,
        candidate: Artifact,
        *,
        seed: int | str,
        matcher: EntityMatcher | None = None,
    ) -> None:
        self.pack = pack
        self.pools = pools
        self.candidate = candidate
        self.seed = seed
        self.matcher = matcher or EntityMatcher(pools)
        self.calls: list[str] = []

    @classmethod
    def for_request(
        cls,
        pack: Pack,
        pools: Pools,
        request: ProposalRequest,
        *,
        seed: int | str,
        matcher: EntityMatcher | None = None,
    ) -> ScaffoldTools:
        """The tools for one attempt: bound to its candidate, seeded `"{seed}:{attempt}"`."""
        return cls(
            pack, pools, request.candidate, seed=f"{seed}:{request.attempt}", matcher=matcher
        )

    def function_schemas(self) -> list[dict[str, Any]]:
        return function_schemas(self.pack)

    def openai_tools(self) -> list[dict[str, Any]]:
        return openai_tools(self.pack)

    def dispatch(self, name: str, args_json: str | None) -> str:
        """Run tool `name` with JSON-encoded arguments; a JSON string result, never raises."""
        if args_json is not None and len(args_json) > MAX_ARGUMENT_CHARS:
            self.calls.append(name if name in TOOL_NAMES else "unknown")
            return _error(f"arguments are {len(args_json)} characters (max {MAX_ARGUMENT_CHARS})")
        try:
            args = json.loads(args_json) if args_json and args_json.strip() else {}
        except (json.JSONDecodeError, RecursionError) as exc:
            self.calls.append(name if name in TOOL_NAMES else "unknown")
            return _error(f"arguments are not valid JSON: {exc}")
        if not isinstance(args, dict):
            self.calls.append(name if name in TOOL_NAMES else "unknown")
            return _error("arguments must be a JSON object")
        return self.call(name, args)

    def call(self, name: str, args: Mapping[str, Any]) -> str:
        """Run tool `name` with parsed arguments; a JSON string result, never raises."""
        self.calls.append(name if name in TOOL_NAMES else "unknown")
        try:
            if name == "synth_column":
                result = self._synth(_SynthArgs.model_validate(args))
            elif name == "rebuild_table":
                result = self._rebuild(_RebuildArgs.model_validate(args))
            elif name == "draft_prose":
                result = self._draft(_DraftArgs.model_validate(args))
            else:
                return _error(f"no tool named {name[:80]!r}; the tools are {', '.join(TOOL_NAMES)}")
        except ValidationError as exc:
            return _error(f"bad arguments for {name}: {_first_error(exc)}")
        except _ToolError as exc:
            return _error(str(exc))
        except Exception as exc:  # a scaffold bug must not end the conversation
            return _error(f"{name} failed: {type(exc).__name__}: {exc}")
        text = json.dumps(result, ensure_ascii=False, sort_keys=True)
        if len(text) > MAX_RESULT_CHARS:
            return _error(f"the result is {len(text)} characters (max {MAX_RESULT_CHARS})")
        return text

    # -- the tools --------------------------------------------------------------------
    def _draft_artifact(self, args: _Args) -> Artifact:
        if args.tables is None:
            return self.candidate
        unknown = sorted(set(args.tables) - set(self.pack.tables))
        if unknown:
            raise _ToolError(f"unknown table(s) in `tables`: {', '.join(unknown)}")
        try:
            return self.candidate.model_copy(
                update={
                    "tables": Artifact.model_validate(
                        {"id": self.candidate.id, "tables": args.tables}
                    ).tables
                }
            )
        except ValidationError as exc:
            raise _ToolError(f"`tables` is not valid: {_first_error(exc)}") from exc

    def _table(self, table: str, draft: Artifact) -> None:
        if table not in self.pack.tables:
            raise _ToolError(
                f"no table {table!r}; the tables are {', '.join(sorted(self.pack.tables))}"
            )
        if table not in draft.tables:
            raise _ToolError(f"the draft has no table {table!r}")

    def _synth(self, args: _SynthArgs) -> dict[str, Any]:
        draft = self._draft_artifact(args)
        self._table(args.table, draft)
        binding = self.pack.tables[args.table]
        col = binding.columns.get(args.column)
        if col is None or col.kind != "object":
            objects = [c for c, b in binding.columns.items() if b.kind == "object"]
            raise _ToolError(
                f"{args.table}.{args.column} is not an object column; "
                f"the object columns of {args.table} are {', '.join(objects)}"
            )
        n = len(draft.tables[args.table])
        rows = args.rows
        if rows is not None and (bad := [r for r in rows if not 0 <= r < n]):
            raise _ToolError(f"row index(es) {bad[:10]} out of range 0..{n - 1}")
        within = args.within
        if within is not None and within not in self.pools.classes:
            raise _ToolError(f"no ontology class named {within[:80]!r}")
        values = synth_column(
            self.pack,
            self.pools,
            draft,
            args.table,
            args.column,
            None if rows is None else sorted(set(rows)),
            seed=self.seed,
            within=within,
        )
        return {"values": {str(i): v for i, v in sorted(values.items())}}

    def _rebuild(self, args: _RebuildArgs) -> dict[str, Any]:
        draft = self._draft_artifact(args)
        self._table(args.table, draft)
        return {"rows": rebuild_table(self.pack, self.pools, draft, args.table, seed=self.seed)}

    def _draft(self, args: _DraftArgs) -> dict[str, Any]:
        draft = self._draft_artifact(args)
        return {"prose": draft_prose(self.pack, self.pools, draft, matcher=self.matcher)}


class _ToolError(Exception):
    """A bad argument found by the tool itself; becomes an error tool message."""


def _error(message: str) -> str:
    return json.dumps({"error": message}, ensure_ascii=False)


def _first_error(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "(arguments)"
    return f"`{where}`: {first['msg']} ({exc.error_count()} problem(s) in all)"
