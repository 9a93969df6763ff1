"""The `openai` proposer: any OpenAI-compatible chat-completions endpoint.

One proposal is one conversation: the messages of `prompting.build_messages`, the scaffold
tools offered by function calling (`tools.ScaffoldTools`), tool calls answered with tool
messages for at most `max_tool_rounds` rounds, then a final answer that must be the
proposal's JSON (`response_format` with the answer's JSON schema when the endpoint takes
it; parsed and validated either way).

Failed attempts (critiques, never crashes), raised as `ProposalFailed`:

* `proposal.malformed_json`  the answer is not one JSON object
* `proposal.schema_invalid`  it is JSON but not the proposal schema
* `proposal.oversized`       it exceeds the size limits (or hit the completion limit)
* `proposal.tool_rounds`     the model was still calling tools after `max_tool_rounds`
* `proposal.budget_spent`    the run's token budget ran out mid-conversation

Endpoint failures are `InfrastructureError` (the run fails closed) or, once the circuit
breaker opens or a replay misses, `EndpointUnavailable` (the batch stops).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from effectors.proposers.openai_client import ChatClient, FormatUnsupported, TranscriptStore
from effectors.proposers.prompting import (
    build_messages,
    parse_answer,
    response_format,
    system_prompt,
)
from effectors.proposers.tools import ScaffoldTools
from effectors.prose.matcher import EntityMatcher
from harness.errors import ConfigError, InfrastructureError, ProposalFailed
from harness.models import CallUsage, Proposal, ProposalRequest
from harness.pack import Pack
from harness.pools import Pools
from harness.workspace import LlmConfig

__all__ = ["OpenAIProposer"]

_MAX_TOOL_CALLS_PER_ROUND = 16


class OpenAIProposer:
    """Proposals from a chat-completions endpoint, with scaffold tools and strict JSON."""

    name = "openai"

    def __init__(
        self,
        pack: Pack,
        pools: Pools,
        settings: LlmConfig,
        *,
        seed: int = 0,
        client: ChatClient | None = None,
        transcripts: TranscriptStore | None = None,
        replay: bool = False,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        env = os.environ if environ is None else environ
        if not settings.model:
            raise ConfigError(
                "the openai proposer needs a model",
                hint="set `model` under [llm] in membrane.toml or $MEMBRANE_LLM_MODEL",
            )
        self.pack = pack
        self.pools = pools
        self.settings = settings
        self.seed = seed
        self.client = client or ChatClient(
            settings,
            transcripts=transcripts,
            replay=replay,
            api_key=env.get(settings.api_key_env) if settings.api_key_env else None,
            allow_remote=env.get("MEMBRANE_ALLOW_MODEL_REQUESTS", "1") != "0",
        )
        self.system = system_prompt(pack)
        self.matcher = EntityMatcher(pools)
        self.format = settings.response_format
        self._run_started: dict[str, float] = {}

    def close(self) -> None:
        """Release the client's pooled connections (`Session.close` calls this)."""
        self.client.close()

    # -- one proposal -----------------------------------------------------------------
    def propose(self, request: ProposalRequest) -> Proposal:
        usage: list[CallUsage] = []
        try:
            return self._converse(request, usage)
        except ProposalFailed as exc:
            exc.usage = tuple(usage)
            raise

    def _deadline(self, run_id: str) -> float:
        start = self._run_started.setdefault(run_id, self.client.clock())
        return start + self.settings.run_timeout_s

    def _converse(self, request: ProposalRequest, usage: list[CallUsage]) -> Proposal:
        tools = ScaffoldTools.for_request(
            self.pack, self.pools, request, seed=self.seed, matcher=self.matcher
        )
        messages = build_messages(request, self.pack, self.pools, system=self.system)
        deadline = self._deadline(request.run_id)
        for rounds in range(self.settings.max_tool_rounds + 1):
            spent = sum(u.tokens_prompt + u.tokens_completion for u in usage)
            if request.tokens_left is not None and usage and spent >= request.tokens_left:
                raise ProposalFailed(
                    "proposal.budget_spent",
                    f"the token budget ran out after {rounds} call(s) ({spent} tokens)",
                )
            if self.client.clock() >= deadline:
                raise InfrastructureError(
                    f"the per-run timeout ({self.settings.run_timeout_s:g}s) of run "
                    f"{request.run_id} is spent"
                )
            message, finish = self._call(messages, tools, deadline, usage)
            calls = message.get("tool_calls")
            if not calls:
                return self._answer(request, message, finish, tools, usage)
            messages.append(_assistant_echo(message))
            messages.extend(self._run_tools(calls, tools))
        raise ProposalFailed(
            "proposal.tool_rounds",
            f"still calling tools after {self.settings.max_tool_rounds} round(s)",
        )

    def _call(
        self,
        messages: list[dict[str, Any]],
        tools: ScaffoldTools,
        deadline: float,
        usage: list[CallUsage],
    ) -> tuple[dict[str, Any], str]:
        while True:
            try:
                reply = self.client.complete(self._body(messages, tools), deadline=deadline)
                break
            except FormatUnsupported:
                if self.format != "auto":
                    raise InfrastructureError(
                        f"{self.client.endpoint} refuses response_format={self.format!r}",
                    ) from None
                self.format = "none"  # detected: this endpoint takes no response_format
        usage.append(reply.usage)
        choices = reply.data.get("choices")
        choice = choices[0] if isinstance(choices, list) and choices else None
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(choice, dict) or not isinstance(message, dict):
            raise InfrastructureError(
                f"{self.client.endpoint} replied without choices[0].message: not a chat completion"
            )
        return message, str(choice.get("finish_reason") or "")

    def _body(self, messages: list[dict[str, Any]], tools: ScaffoldTools) -> dict[str, Any]:
        s = self.settings
        body: dict[str, Any] = {
            "model": s.model,
            "messages": messages,
            "temperature": s.temperature,
            "seed": self.seed if s.seed is None else s.seed,
            "max_tokens": s.max_completion_tokens,
        }
        if s.tools and s.max_tool_rounds > 0:
            body["tools"] = tools.openai_tools()
        if self.format in ("auto", "json_schema"):
            body["response_format"] = response_format(self.pack)
        elif self.format == "json_object":
            body["response_format"] = {"type": "json_object"}
        return body

    def _run_tools(self, calls: object, tools: ScaffoldTools) -> list[dict[str, Any]]:
        if not isinstance(calls, list) or len(calls) > _MAX_TOOL_CALLS_PER_ROUND:
            raise ProposalFailed(
                "proposal.schema_invalid",
                f"tool_calls must be a list of at most {_MAX_TOOL_CALLS_PER_ROUND} calls",
            )
        out = []
        for i, call in enumerate(calls):
            fn = call.get("function") if isinstance(call, dict) else None
            call_id = call.get("id") if isinstance(call, dict) else None
            name = fn.get("name") if isinstance(fn, dict) else None
            args = fn.get("arguments") if isinstance(fn, dict) else None
            if not isinstance(name, str):
                content = '{"error": "a tool call without a function name"}'
            else:
                content = tools.dispatch(name, args if isinstance(args, str) else None)
            out.append(
                {
                    "role": "tool",
                    "tool_call_id": call_id if isinstance(call_id, str) else f"call_{i}",
                    "content": content,
                }
            )
        return out

    def _answer(
        self,
        request: ProposalRequest,
        message: dict[str, Any],
        finish: str,
        tools: ScaffoldTools,
        usage: list[CallUsage],
    ) -> Proposal:
        content = message.get("content")
        text = content if isinstance(content, str) else None
        if finish == "length":
            raise ProposalFailed(
                "proposal.oversized",
                f"the answer hit the completion limit ({self.settings.max_completion_tokens} "
                "tokens) before it was complete",
            )
        artifact = parse_answer(text, request, self.pack, max_chars=self.settings.max_answer_chars)
        return Proposal(
            artifact=artifact,
            proposer=self.name,
            notes=(f"{len(usage)} model call(s), {len(tools.calls)} tool call(s)",),
            tool_calls=tuple(tools.calls),
            tokens_prompt=sum(u.tokens_prompt for u in usage),
            tokens_completion=sum(u.tokens_completion for u in usage),
            usage=tuple(usage),
        )


def _assistant_echo(message: dict[str, Any]) -> dict[str, Any]:
    """The assistant turn that asked for tools, as sent back (only the standard fields)."""
    out: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
    out["tool_calls"] = message.get("tool_calls")
    return out
