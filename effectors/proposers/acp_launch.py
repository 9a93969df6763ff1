"""The `acp` proposer's default agent: hermes-agent through the locked launcher
(`acp_hermes.py`) in hermes' own environment (`.venv-hermes`, `make hermes`).

With `[acp].command` empty, the proposer starts `.venv-hermes/bin/python -I acp_hermes.py`
against the `[llm]` endpoint, in the `hermes` proposer's sandbox layout under
`.membrane/acp/hermes/` (`home/` is `HERMES_HOME` with its `config.yaml`, `user/` its
`HOME`, `tmp/` its `TMPDIR`). The endpoint, model, limits and system prompt go to the
launcher in `settings.json` there; the API key only in its environment, never written.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Final
from urllib.parse import urlsplit

from effectors.proposers import acp_hermes
from effectors.proposers.hermes import HERMES_PYTHON_ENV, Sandbox, default_python, hermes_config
from effectors.proposers.openai_client import LOOPBACK_HOSTS
from harness.errors import ConfigError
from harness.workspace import AcpConfig, LlmConfig, atomic_write

__all__ = ["LAUNCHER", "locked_hermes", "write_settings"]

LAUNCHER: Final = Path(acp_hermes.__file__).resolve()


def locked_hermes(
    settings: AcpConfig, llm: LlmConfig | None, root: Path, environ: Mapping[str, str]
) -> AcpConfig:
    """`settings` with the launcher as the agent (checked: model, environment, host)."""
    if llm is None or not llm.model:
        raise ConfigError(
            "[acp].command is empty, so the agent is hermes (locked to the scaffold tools), "
            "which needs [llm].model",
            hint="set `model` (and `base_url`) under [llm], or `command` under [acp] for "
            "another ACP agent",
        )
    python = default_python(environ)
    if not python.is_file():
        raise ConfigError(
            f"[acp].command is empty and the hermes environment is missing ({python})",
            hint=f"run `make hermes` (or point ${HERMES_PYTHON_ENV} at its python), or set "
            "`command` under [acp]",
        )
    host = urlsplit(llm.base_url).hostname
    if environ.get("MEMBRANE_ALLOW_MODEL_REQUESTS", "1") == "0" and host not in LOOPBACK_HOSTS:
        raise ConfigError(
            f"model requests to {host} are disabled (MEMBRANE_ALLOW_MODEL_REQUESTS=0); "
            "only loopback endpoints are allowed"
        )
    env = Sandbox(root).env(environ)
    env["MEMBRANE_HERMES_SETTINGS"] = str(root / "settings.json")
    key = environ.get(llm.api_key_env) if llm.api_key_env else None
    if key:
        env["MEMBRANE_HERMES_API_KEY"] = key
    env.update(settings.env)
    return settings.model_copy(
        update={
            "command": (str(python), "-I", str(LAUNCHER)),
            "name": settings.name or f"hermes-acp:{llm.model}",
            "env": env,
            "pass_env": (),
        }
    )


def write_settings(root: Path, llm: LlmConfig, system: str, seed: int) -> None:
    """The sandbox (`config.yaml`) and the launcher's `settings.json` (no key)."""
    sandbox = Sandbox(root)
    sandbox.prepare(llm)
    # the `hermes` proposer's config, and no session titles: on the ACP path hermes would ask
    # the model for one after each turn (a call outside the attempt)
    config = {**hermes_config(llm), "auxiliary": {"title_generation": {"enabled": False}}}
    text = json.dumps(config, indent=2, sort_keys=True) + "\n"  # JSON is YAML
    atomic_write(sandbox.home / "config.yaml", text.encode())
    data = {
        "base_url": llm.base_url,
        "model": llm.model,
        "temperature": llm.temperature,
        "seed": llm.seed if llm.seed is not None else seed,
        "max_tokens": llm.max_completion_tokens,
        "max_iterations": llm.max_tool_rounds + 1,
        "system_prompt": system,
    }
    atomic_write(root / "settings.json", json.dumps(data, indent=1).encode())
