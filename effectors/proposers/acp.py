"""The `acp` proposer: any Agent Client Protocol agent proposes, membrane being the client.

    membrane (this module, ACP client)  --JSON-RPC on stdio-->  the agent ([acp].command)
      prompting.user_message  -- one prompt turn per attempt -->  session/prompt
      ScaffoldTools.call  <-- mcp_bridge <-- unix socket <--      mcp_relay (MCP stdio server
                                                                  the agent starts)
      prompting.parse_answer  <-- agent_message_chunk ----------  the final message

Per run one ACP session (resumed across the run's attempts; its first turn carries the
system prompt), per attempt one prompt turn holding the critique, the spine, the
candidate and the pool as data blocks. The scaffold tools are served over MCP (stdio: the
relay is named in `session/new`) and run in membrane, bound to the attempt. The final
message is parsed and validated like the `openai` proposer's answer. Every permission
request is denied and the denial lands in the trace (the proposal's notes, or the failed
attempt's evidence). The agent can never run a gate or commit.

Failed attempts (critiques, never a crash of the batch), raised as `ProposalFailed`:

* `proposal.agent_failed`   the agent crashed, wrote garbage on stdout, answered a protocol
                            error or refused; the process is restarted for the next attempt
* `proposal.agent_timeout`  the turn passed `prompt_timeout_s`: cancelled, the process killed
* `proposal.malformed_json`, `proposal.schema_invalid`, `proposal.oversized`
                            (also stop reason `max_tokens`), `proposal.tool_rounds` (stop
                            reason `max_turn_requests`): as for the `openai` proposer

After `breaker_failures` agent failures in a row the batch stops (`EndpointUnavailable`).
Each turn (its outcome, failed or not) is cached content-addressed in
`.membrane/transcripts/`; the key names the agent, the prompt, the tools and the run's
previous turn. `--replay` answers from there and never starts the agent.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

from effectors.proposers.acp_launch import locked_hermes, write_settings
from effectors.proposers.openai_client import CircuitBreaker, TranscriptStore, request_key
from effectors.proposers.prompting import parse_answer, system_prompt, user_message
from effectors.proposers.tools import ScaffoldTools, function_schemas
from effectors.prose.matcher import EntityMatcher
from harness.errors import ConfigError, EndpointUnavailable, InfrastructureError, ProposalFailed
from harness.models import CallUsage, Proposal, ProposalRequest
from harness.pack import Pack
from harness.pools import Pools
from harness.workspace import AcpConfig, LlmConfig

__all__ = ["AcpProposer"]

_FAILURE_CODES: Final = {
    "crashed": "proposal.agent_failed",
    "garbage": "proposal.agent_failed",
    "protocol": "proposal.agent_failed",
    "timeout": "proposal.agent_timeout",
}


class AcpProposer:
    """Proposals from an ACP agent process (see the module docstring)."""

    name = "acp"

    def __init__(
        self,
        pack: Pack,
        pools: Pools,
        settings: AcpConfig,
        sandbox: Path,
        *,
        seed: int = 0,
        transcripts: TranscriptStore | None = None,
        replay: bool = False,
        llm: LlmConfig | None = None,
        environ: Mapping[str, str] = os.environ,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if replay and transcripts is None:
            raise ConfigError("--replay needs a transcript folder")
        self.locked_hermes = not settings.command  # the default agent: hermes, locked
        if self.locked_hermes and not replay:
            settings = locked_hermes(settings, llm, sandbox / "hermes", environ)
        elif not replay:
            _check_command(settings, environ)
        self.pack = pack
        self.pools = pools
        self.settings = settings
        self.sandbox = sandbox
        self.seed = seed
        self.transcripts = transcripts
        self.replay = replay
        self.clock = clock
        self.system = system_prompt(pack)
        if self.locked_hermes and not replay:
            write_settings(sandbox / "hermes", llm or LlmConfig(), self.system, seed)
        self.agent = settings.name or (
            f"hermes-acp:{(llm or LlmConfig()).model}"
            if self.locked_hermes
            else Path(settings.command[0]).name
        )
        self.schemas = function_schemas(pack)
        self.matcher = EntityMatcher(pools)
        self.breaker = CircuitBreaker(settings.breaker_failures)
        self._environ = dict(environ)
        self._chain: dict[str, str | None] = {}  # run id -> key of its previous turn
        self._run_started: dict[str, float] = {}
        self._live: Any = None  # the _Live supervisor, started at the first live turn

    # -- the Proposer protocol ---------------------------------------------------------
    def propose(self, request: ProposalRequest) -> Proposal:
        tools = ScaffoldTools.for_request(
            self.pack, self.pools, request, seed=self.seed, matcher=self.matcher
        )
        user = user_message(request, self.pack, self.pools)
        conversation = {
            "proposer": self.name,
            "agent": self.agent,
            "system_prompt": self.system,
            "user_message": user,
            "tools": self.schemas,
            "previous": self._chain.get(request.run_id),
        }
        key = request_key(conversation)
        store = self.transcripts
        cached = (
            store.get(key) if store is not None and (self.replay or self.settings.cache) else None
        )
        if cached is not None and not self.replay and "failure" in cached[1]:
            cached = None  # a live run tries the agent again; a replay reproduces the failure
        if self.replay and cached is None:
            raise EndpointUnavailable(
                f"replay: no acp transcript for request {key[:16]} in "
                f"{store and store.root}; run without --replay to record it"
            )
        if cached is not None:
            result, seconds = cached[1], 0.0
        else:
            t0 = self.clock()
            result = self._turn(request, tools, user)
            seconds = self.clock() - t0
            if store is not None:
                store.put(key, conversation, 200, result)
        self._chain[request.run_id] = None if "failure" in result else key
        usage = _usage(result, key, seconds, cached=cached is not None)
        try:
            return self._proposal(result, request, usage)
        except ProposalFailed as exc:
            exc.usage = (usage,)
            raise

    def close(self) -> None:
        if self._live is not None:
            self._live.close()
            self._live = None

    # -- one live turn -----------------------------------------------------------------
    def _turn(self, request: ProposalRequest, tools: ScaffoldTools, user: str) -> dict[str, Any]:
        from effectors.proposers.acp_live import Live  # the SDK only when an agent runs

        if self.breaker.open:
            raise EndpointUnavailable(
                f"acp proposer unavailable: {self.breaker.failures} agent failures in a row "
                f"(last: {self.breaker.last_error})"
            )
        start = self._run_started.setdefault(request.run_id, self.clock())
        left = start + self.settings.run_timeout_s - self.clock()
        if left <= 0:
            raise InfrastructureError(
                f"the per-run timeout ({self.settings.run_timeout_s:g}s) of run "
                f"{request.run_id} is spent"
            )
        if self._live is None:
            self._live = Live(self.settings, self.sandbox, self.schemas, self._environ)
        system = None if self.locked_hermes else self.system  # the launcher sets it itself
        result: dict[str, Any] = self._live.turn(
            request.run_id, system, user, tools, min(left, self.settings.prompt_timeout_s)
        )
        failure = result.get("failure")
        if isinstance(failure, dict):
            self.breaker.failure(str(failure.get("message", "")))
            if self.breaker.open:
                raise EndpointUnavailable(
                    f"acp proposer unavailable after {self.breaker.failures} agent failures in "
                    f"a row (last: {self.breaker.last_error})"
                )
        else:
            self.breaker.success()
        return result

    # -- reading the result ------------------------------------------------------------
    def _proposal(
        self, result: dict[str, Any], request: ProposalRequest, usage: CallUsage
    ) -> Proposal:
        denied = [str(d) for d in result.get("denied", []) if isinstance(d, str)]
        failure = result.get("failure")
        if isinstance(failure, dict):
            kind = str(failure.get("kind", "crashed"))
            evidence = tuple(str(e) for e in failure.get("evidence", []))
            raise ProposalFailed(
                _FAILURE_CODES.get(kind, "proposal.agent_failed"),
                str(failure.get("message", "the agent failed")),
                evidence=(*evidence, *denied),
            )
        stop = str(result.get("stop_reason", ""))
        if stop == "max_tokens":
            raise ProposalFailed(
                "proposal.oversized",
                "the agent stopped at its token limit (stop reason max_tokens)",
            )
        if stop == "max_turn_requests":
            raise ProposalFailed(
                "proposal.tool_rounds",
                "the agent stopped at its limit of model requests (stop reason max_turn_requests)",
            )
        if stop != "end_turn":
            raise ProposalFailed(
                "proposal.agent_failed",
                f"the agent ended the turn with stop reason {stop[:40]!r}",
                evidence=tuple(denied),
            )
        text = result.get("text")
        artifact = parse_answer(
            text if isinstance(text, str) else None,
            request,
            self.pack,
            max_chars=self.settings.max_answer_chars,
        )
        called = result.get("tool_calls")
        reported = result.get("agent_tool_calls")
        notes = [
            f"acp agent {result.get('agent') or self.agent}: "
            f"{len(reported) if isinstance(reported, list) else 0} tool call(s) reported, "
            f"{len(called) if isinstance(called, list) else 0} scaffold tool call(s) run",
            *denied,
        ]
        return Proposal(
            artifact=artifact,
            proposer=self.name,
            notes=tuple(notes),
            tool_calls=tuple(str(c) for c in called) if isinstance(called, list) else (),
            tokens_prompt=usage.tokens_prompt,
            tokens_completion=usage.tokens_completion,
            usage=(usage,),
        )


def _check_command(settings: AcpConfig, environ: Mapping[str, str]) -> None:
    """The agent's executable exists (found on the agent's PATH when it has no slash)."""
    program = settings.command[0]
    path = settings.env.get("PATH", environ.get("PATH") if "PATH" in settings.pass_env else None)
    if shutil.which(program, path=path) is None:
        raise ConfigError(
            f"[acp].command: {program!r} is not an executable file"
            + ("" if "/" in program else " on the agent's PATH"),
            hint="set `command` under [acp] in membrane.toml to the agent's argv "
            '(e.g. ["/usr/local/bin/my-agent", "--acp"])',
        )


def _usage(result: dict[str, Any], key: str, seconds: float, *, cached: bool) -> CallUsage:
    prompt, completion = (
        _count(result.get("tokens_prompt")),
        _count(result.get("tokens_completion")),
    )
    return CallUsage(
        tokens_prompt=prompt,
        tokens_completion=completion,
        seconds=round(max(0.0, seconds), 6),
        cached=cached,
        request=key,
        estimated=bool(result.get("estimated", False)),
    )


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0
