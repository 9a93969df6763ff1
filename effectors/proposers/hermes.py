"""The `hermes` proposer: hermes-agent's `AIAgent` proposes, with only the scaffold tools.

hermes-agent (PyPI `hermes-agent`, pinned in `constraints-hermes.txt`) pins exact versions
of pydantic, openai, httpx ... that conflict with membrane's, and installs generic top-level
modules (`tools`, `utils`, `agent`), so it runs in its own environment, `.venv-hermes`
(`make hermes`), behind the same `Proposer` interface:

    membrane (this module)  --JSON lines over a pipe-->  hermes_worker.py (.venv-hermes)
      prompting.build_messages                            AIAgent(enabled_toolsets=[scaffold])
      ScaffoldTools.call  <-- each tool call relayed --   registry handlers
      prompting.parse_answer  <-- final response -------  run_conversation(...)

The request is the `openai` proposer's: the same system prompt and user message
(`effectors/proposers/prompting.py`), the same scaffold tools (`tools.py`), the same
`[llm]` endpoint settings, and the answer is parsed and validated the same way. Each
conversation is cached content-addressed in `.membrane/transcripts/`, so `--replay` needs
neither the endpoint nor the hermes environment.

The sandbox is `.membrane/hermes/` in the workspace: `home/` is `HERMES_HOME` (its
`config.yaml` pins `model.context_length` and turns memory, compression, the curator and the
model catalogue off), `user/` is the worker's `HOME` (and XDG folders), `tmp/` its `TMPDIR`,
`worker.log` its stderr. The API key travels over the pipe only; it is never written.

Failures: a worker that crashes, breaks the protocol or passes `run_timeout_s` is killed
and the run fails closed (`InfrastructureError`), as does a conversation hermes gave up on
(endpoint down); after `breaker_failures` of those in a row the batch stops
(`EndpointUnavailable`). An answer that does not parse or validate is a failed attempt
with its own critique (`ProposalFailed`), like the `openai` proposer's.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

from effectors.proposers import hermes_worker
from effectors.proposers.hermes_process import WorkerError, WorkerProcess
from effectors.proposers.openai_client import (
    LOOPBACK_HOSTS,
    CircuitBreaker,
    TranscriptStore,
    request_key,
)
from effectors.proposers.prompting import build_messages, parse_answer, system_prompt
from effectors.proposers.tools import ScaffoldTools
from effectors.prose.matcher import EntityMatcher
from harness.errors import ConfigError, EndpointUnavailable, InfrastructureError, ProposalFailed
from harness.models import Artifact, CallUsage, Proposal, ProposalRequest
from harness.pack import Pack
from harness.pools import Pools
from harness.workspace import LlmConfig

__all__ = [
    "CONTEXT_LENGTH",
    "HERMES_PYTHON_ENV",
    "HERMES_VERSION",
    "HermesProposer",
    "Sandbox",
    "default_python",
]

HERMES_VERSION: Final = "0.19.0"  # keep in step with constraints-hermes.txt
HERMES_PYTHON_ENV: Final = "MEMBRANE_HERMES_PYTHON"  # overrides the interpreter's path
CONTEXT_LENGTH: Final = 131_072  # pinned in config.yaml: hermes refuses < 64k, else probes
START_TIMEOUT_S: Final = 60.0
_PASS_ENV: Final = (
    "PATH", "LANG", "LC_ALL", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE",
    "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY",
    "http_proxy", "https_proxy", "no_proxy", "all_proxy",
)  # fmt: skip
_OUT_OF_ROUNDS: Final = ("max_iterations_reached", "budget_exhausted")  # hermes' exit reasons
_WORKER_SCRIPT: Final = Path(hermes_worker.__file__).resolve()


def default_python(environ: Mapping[str, str] = os.environ) -> Path:
    """$MEMBRANE_HERMES_PYTHON, else `.venv-hermes/bin/python` in the source checkout."""
    if raw := environ.get(HERMES_PYTHON_ENV):
        return Path(raw)
    return Path(__file__).resolve().parents[2] / ".venv-hermes" / "bin" / "python"


@dataclass(frozen=True)
class Sandbox:
    """The worker's folders, all under the workspace's `.membrane/hermes/`."""

    root: Path

    @property
    def home(self) -> Path:  # HERMES_HOME
        return self.root / "home"

    @property
    def user(self) -> Path:  # HOME
        return self.root / "user"

    @property
    def tmp(self) -> Path:
        return self.root / "tmp"

    @property
    def log(self) -> Path:
        return self.root / "worker.log"

    def prepare(self, settings: LlmConfig) -> None:
        for d in (self.home, self.user, self.tmp):
            d.mkdir(parents=True, exist_ok=True)
        # JSON is YAML: hermes reads this as its config.yaml
        text = json.dumps(hermes_config(settings), indent=2, sort_keys=True) + "\n"
        (self.home / "config.yaml").write_text(text, encoding="utf-8")

    def env(self, environ: Mapping[str, str] = os.environ) -> dict[str, str]:
        env = {k: environ[k] for k in _PASS_ENV if k in environ}
        env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
        env.update(
            HERMES_HOME=str(self.home),
            HERMES_DISABLE_LAZY_INSTALLS="1",
            HOME=str(self.user),
            TMPDIR=str(self.tmp),
            XDG_CONFIG_HOME=str(self.user / ".config"),
            XDG_CACHE_HOME=str(self.user / ".cache"),
            XDG_DATA_HOME=str(self.user / ".local" / "share"),
            XDG_STATE_HOME=str(self.user / ".local" / "state"),
            PYTHONIOENCODING="utf-8",
        )
        return env


def hermes_config(settings: LlmConfig) -> dict[str, Any]:
    """hermes' config.yaml: our endpoint, nothing it could learn, probe or fetch."""
    return {
        "model": {
            "default": settings.model,
            "provider": "custom",
            "base_url": settings.base_url,
            "context_length": CONTEXT_LENGTH,
        },
        "providers": {"custom": {"request_timeout_seconds": settings.timeout_s}},
        "agent": {"api_max_retries": max(1, settings.retries)},
        "memory": {"memory_enabled": False, "user_profile_enabled": False},
        "compression": {"enabled": False},
        "curator": {"enabled": False},
        "model_catalog": {"enabled": False},
    }


class HermesProposer:
    """Proposals from hermes-agent in its own environment (see the module docstring)."""

    name = "hermes"

    def __init__(
        self,
        pack: Pack,
        pools: Pools,
        settings: LlmConfig,
        sandbox: Path,
        *,
        seed: int = 0,
        transcripts: TranscriptStore | None = None,
        replay: bool = False,
        python: Path | None = None,
        environ: Mapping[str, str] = os.environ,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not settings.model:
            raise ConfigError("[llm].model is empty", hint="set the model the endpoint serves")
        if replay and transcripts is None:
            raise ConfigError("--replay needs a transcript folder")
        host = urlsplit(settings.base_url).hostname
        if environ.get("MEMBRANE_ALLOW_MODEL_REQUESTS", "1") == "0" and host not in LOOPBACK_HOSTS:
            raise ConfigError(
                f"model requests to {host} are disabled (MEMBRANE_ALLOW_MODEL_REQUESTS=0); "
                "only loopback endpoints are allowed"
            )
        self.pack = pack
        self.pools = pools
        self.settings = settings
        self.sandbox = Sandbox(sandbox)
        self.seed = seed
        self.transcripts = transcripts
        self.replay = replay
        self.python = python or default_python(environ)
        if not replay and not self.python.is_file():
            raise ConfigError(
                f"the hermes environment is missing ({self.python} does not exist)",
                hint=f"run `make hermes`, or point ${HERMES_PYTHON_ENV} at its python",
            )
        self._api_key = environ.get(settings.api_key_env) if settings.api_key_env else None
        self._environ = dict(environ)
        self.clock = clock
        self.system = system_prompt(pack)
        self.matcher = EntityMatcher(pools)
        self.breaker = CircuitBreaker(settings.breaker_failures)
        self.worker: WorkerProcess | None = None
        self._run_started: dict[str, float] = {}

    # -- the Proposer protocol ---------------------------------------------------------
    def propose(self, request: ProposalRequest) -> Proposal:
        tools = ScaffoldTools.for_request(
            self.pack, self.pools, request, seed=self.seed, matcher=self.matcher
        )
        conversation = self.conversation(request, tools)
        key = request_key(conversation)
        store = self.transcripts
        cached = (
            store.get(key) if store is not None and (self.replay or self.settings.cache) else None
        )
        if self.replay and cached is None:
            raise EndpointUnavailable(
                f"replay: no hermes transcript for request {key[:16]} in "
                f"{store and store.root}; run without --replay to record it"
            )
        if cached is not None:
            result, seconds = cached[1], 0.0
        else:
            t0 = self.clock()
            result = self._converse(conversation, tools, self._deadline(request.run_id))
            seconds = self.clock() - t0
            if store is not None:
                store.put(key, conversation, 200, result)
        usage = CallUsage(
            tokens_prompt=_count(result.get("prompt_tokens")),
            tokens_completion=_count(result.get("completion_tokens")),
            seconds=round(max(0.0, seconds), 6),
            cached=cached is not None,
            request=key,
        )
        try:
            artifact = self._answer(result, request)
        except ProposalFailed as exc:
            exc.usage = (usage,)
            raise
        called = result.get("tool_calls")
        return Proposal(
            artifact=artifact,
            proposer=self.name,
            notes=(
                f"hermes-agent {result.get('hermes_version', HERMES_VERSION)}: "
                f"{_count(result.get('api_calls'))} model call(s), "
                f"{len(called) if isinstance(called, list) else 0} tool call(s)",
            ),
            tool_calls=tuple(str(c) for c in called) if isinstance(called, list) else (),
            tokens_prompt=usage.tokens_prompt,
            tokens_completion=usage.tokens_completion,
            usage=(usage,),
        )

    def close(self) -> None:
        if self.worker is not None:
            self.worker.close()
            self.worker = None

    # -- the conversation --------------------------------------------------------------
    def conversation(self, request: ProposalRequest, tools: ScaffoldTools) -> dict[str, Any]:
        """What the worker is asked, less the endpoint's URL and key: the transcript's key
        (like the `openai` proposer's request body, it names the model, not the server)."""
        _system, user = build_messages(request, self.pack, self.pools, system=self.system)
        s = self.settings
        max_tokens = s.max_completion_tokens
        if request.tokens_left is not None:  # hermes cannot stop mid-conversation: cap a call
            max_tokens = max(1, min(max_tokens, request.tokens_left))
        return {
            "proposer": self.name,
            "hermes": HERMES_VERSION,
            "endpoint": {  # the base URL and key are added when sent: a replay may run elsewhere
                "model": s.model,
                "temperature": s.temperature,
                "seed": s.seed if s.seed is not None else self.seed,
            },
            "system_prompt": self.system,
            "user_message": user["content"],
            "tools": tools.openai_tools() if s.tools and s.max_tool_rounds > 0 else [],
            "limits": {"max_tokens": max_tokens, "max_iterations": s.max_tool_rounds + 1},
        }

    def _deadline(self, run_id: str) -> float:
        """`run_timeout_s` counts from the run's first call, across its attempts."""
        start = self._run_started.setdefault(run_id, self.clock())
        return start + self.settings.run_timeout_s

    def _converse(
        self, conversation: dict[str, Any], tools: ScaffoldTools, deadline: float
    ) -> dict[str, Any]:
        if self.breaker.open:
            raise EndpointUnavailable(
                f"hermes proposer unavailable: {self.breaker.failures} failed conversations "
                f"in a row (last: {self.breaker.last_error})"
            )
        if self.clock() >= deadline:
            raise InfrastructureError(
                f"the per-run timeout ({self.settings.run_timeout_s:g}s) is spent"
            )
        message = {
            "type": "request",
            **conversation,
            "endpoint": {
                **conversation["endpoint"],
                "base_url": self.settings.base_url,
                "api_key": self._api_key or "",
            },
        }
        try:
            worker = self._worker(deadline)
            result = worker.converse(message, tools.call, deadline)
        except WorkerError as exc:
            raise self._failure(str(exc)) from exc
        if result.get("failed") and not _truncated(result):
            raise self._failure(
                f"hermes gave up on {self.settings.base_url}: {result.get('error') or 'no answer'}"
            )
        self.breaker.success()
        hello = self.worker.hello if self.worker is not None else {}
        result["hermes_version"] = hello.get("hermes_version", HERMES_VERSION)
        return result

    def _answer(self, result: dict[str, Any], request: ProposalRequest) -> Artifact:
        """The model's final answer as an artifact, or the failed attempt's critique."""
        if _truncated(result):
            raise ProposalFailed(
                "proposal.oversized",
                f"the answer hit the completion limit ({self.settings.max_completion_tokens} "
                "tokens) before it was complete",
            )
        reason = str(result.get("exit_reason") or "")
        if not result.get("completed") and reason.startswith(_OUT_OF_ROUNDS):
            raise ProposalFailed(
                "proposal.tool_rounds",
                f"still calling tools after {self.settings.max_tool_rounds} round(s)",
            )
        text = result.get("final_response")
        return parse_answer(
            text if isinstance(text, str) else None,
            request,
            self.pack,
            max_chars=self.settings.max_answer_chars,
        )

    def _failure(self, error: str) -> InfrastructureError:
        self.breaker.failure(error)
        if self.breaker.open:
            return EndpointUnavailable(
                f"hermes proposer unavailable after {self.breaker.failures} failed "
                f"conversations in a row (last: {error})"
            )
        return InfrastructureError(error)

    def _worker(self, deadline: float) -> WorkerProcess:
        if self.worker is not None and self.worker.alive:
            return self.worker
        self.sandbox.prepare(self.settings)
        self.worker = WorkerProcess(
            self.python,
            _WORKER_SCRIPT,
            env=self.sandbox.env(self._environ),
            cwd=self.sandbox.root,
            log=self.sandbox.log,
            clock=self.clock,
        )
        hello = self.worker.start(min(deadline, self.clock() + START_TIMEOUT_S))
        if hello.get("protocol") != hermes_worker.PROTOCOL_VERSION:
            self.close()
            raise WorkerError(f"the hermes worker speaks protocol {hello.get('protocol')}")
        return self.worker


def _truncated(result: dict[str, Any]) -> bool:
    """hermes stopped because a completion hit `max_tokens` (the model's fault, not the
    endpoint's, though hermes reports the first such reply as `failed`)."""
    return "truncated due to output length" in str(result.get("error") or "")


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0
