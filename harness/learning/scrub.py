"""Deterministic secret scrubbing of people's text, before it is stored or sent anywhere.

A regex pass is the guarantee, not a model: every captured correction is scrubbed before it
reaches the backlog, the distiller (local or LLM) or a log, and every distilled lesson is
scrubbed again before it is persisted. What is scrubbed, each replaced by
`[REDACTED:<family>]`:

* provider-prefixed keys: OpenAI/Anthropic (`sk-`, `sk-proj-`, `sk-ant-`), GitHub (`ghp_`,
  `gho_`, `ghu_`, `ghs_`, `ghr_`, `github_pat_`), Slack (`xoxb-`, `xoxp-`, `xoxa-`, `xoxr-`,
  `xoxs-`), AWS access key ids (`AKIA`/`ASIA` + 16), Google API keys (`AIza` + 35), Stripe
  (`sk_live_`, `rk_live_`, `sk_test_`), npm (`npm_`), Hugging Face (`hf_`);
* JSON Web Tokens (three base64url parts, the first two starting `eyJ`);
* PEM private key blocks (`-----BEGIN ... PRIVATE KEY-----`, to the END line or, when the
  block is cut off, to the end of the text);
* credentials in URLs (`https://user:secret@host`: the secret);
* `key = value` / `key: value` pairs whose key names a secret (password, passwd, pwd, secret,
  token, api key, access key, auth, credential, private key, client secret): the value;
  `Bearer <token>`;
* long high-entropy strings in prose: 24+ characters from the base64/hex alphabets, at least
  two character classes with a digit, and Shannon entropy >= 3.7 bits a character.

Never scrubbed: membrane's own content hashes and other hex digests (40 or 64 lowercase hex
digits, optionally `sha256:`-prefixed), which are provenance, not secrets. Near misses
survive: "passwords are hashed", "the token column", "sk-ing", "AKIA" alone, ordinary long
words and product codes (their entropy is low).

Input is capped before matching (`MAX_SCRUB_CHARS`), and every pattern is linear in the text
(no nested quantifiers over overlapping classes).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Final

__all__ = ["MAX_SCRUB_CHARS", "Scrubbed", "is_digest", "scrub"]

MAX_SCRUB_CHARS: Final = 100_000

_FAMILIES: Final[tuple[tuple[str, re.Pattern[str]], ...]] = (
    (
        "private_key",
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----"
            r"(?:.*?-----END (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----|.*\Z)",
            re.S,
        ),
    ),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    ("anthropic_key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{16,}")),
    ("openai_key", re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}")),
    ("github_token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})")),
    ("slack_token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("aws_access_key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("google_api_key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}")),
    ("stripe_key", re.compile(r"\b(?:sk|rk|pk)_(?:live|test)_[0-9A-Za-z]{16,}")),
    ("npm_token", re.compile(r"\bnpm_[A-Za-z0-9]{36}\b")),
    ("huggingface_token", re.compile(r"\bhf_[A-Za-z0-9]{30,}\b")),
)

# scheme://user:secret@host -> the secret
_URL_CRED: Final = re.compile(
    r"(?i)\b([a-z][a-z0-9+.-]{1,20}://[^\s:/@]{1,200}:)([^\s@/]{1,200})(?=@)"
)
_BEARER: Final = re.compile(r"(?i)\b(bearer\s+)([A-Za-z0-9._~+/=-]{12,})")
_SECRET_KEY: Final = (
    r"(?:pass(?:word|wd|phrase)?|pwd|secret(?:[_ -]?key)?|client[_ -]?secret|"
    r"(?:access|auth|api|bearer|refresh|session|private)?[_ -]?token|api[_ -]?key|"
    r"access[_ -]?key(?:[_ -]?id)?|auth(?:orization)?|credentials?|private[_ -]?key)"
)
# key=value / key: value / "key": "value"; the value is the secret
_PAIR: Final = re.compile(
    rf"(?i)(?<![A-Za-z0-9])([\"']?{_SECRET_KEY}[\"']?\s*[:=]\s*)"
    r"(\"[^\"\n]{1,500}\"|'[^'\n]{1,500}'|[^\s,;]{1,500})"
)
_CANDIDATE: Final = re.compile(r"[A-Za-z0-9+/_=.-]{24,}")
_DIGEST: Final = re.compile(r"(?:sha256:|sha1:)?(?:[0-9a-f]{64}|[0-9a-f]{40})")
_ALNUM_RUN: Final = re.compile(r"[A-Za-z0-9]+")
_REDACTED: Final = re.compile(r"\[REDACTED:[a-z_]+\]")


@dataclass(frozen=True)
class Scrubbed:
    text: str
    found: tuple[str, ...]  # the family of each redaction, in order

    @property
    def changed(self) -> bool:
        return bool(self.found)


def is_digest(token: str) -> bool:
    """A hex digest (membrane's content hashes, commit ids): never a secret to scrub."""
    return _DIGEST.fullmatch(token) is not None


def _entropy(s: str) -> float:
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in Counter(s).values())


def _high_entropy(token: str) -> bool:
    core = token.strip(".-_=")
    if len(core) < 24 or is_digest(core) or _REDACTED.search(core):
        return False
    if not any(ch.isdigit() for ch in core):
        return False
    classes = sum(
        (
            any(ch.islower() for ch in core),
            any(ch.isupper() for ch in core),
            any(ch.isdigit() for ch in core),
            any(not ch.isalnum() for ch in core),
        )
    )
    if classes < 2:
        return False
    # codes and paths ("EQ-0001-ROOM-0002-CT"): short segments between separators; a random
    # token has a long unbroken alphanumeric run
    if max(len(run) for run in _ALNUM_RUN.findall(core)) < 16:
        return False
    # a hex run that is not a digest length (an API secret in hex) counts as 4 bits of
    # alphabet; mixed alphabets must show real randomness
    return _entropy(core) >= 3.7


def scrub(text: str) -> Scrubbed:
    """`text` with every secret above replaced; the families found."""
    text = text[:MAX_SCRUB_CHARS]
    found: list[str] = []

    def sub(family: str, pattern: re.Pattern[str], keep_group: int | None = None) -> None:
        nonlocal text

        def repl(m: re.Match[str]) -> str:
            found.append(family)
            prefix = m.group(keep_group) if keep_group is not None else ""
            return f"{prefix}[REDACTED:{family}]"

        text = pattern.sub(repl, text)

    for family, pattern in _FAMILIES:
        sub(family, pattern)
    sub("url_credential", _URL_CRED, keep_group=1)
    sub("bearer_token", _BEARER, keep_group=1)

    def pair(m: re.Match[str]) -> str:
        value = m.group(2)
        bare = value.strip("\"'")
        if not bare or _REDACTED.fullmatch(bare) or bare.lower() in _NOT_A_VALUE:
            return m.group(0)
        found.append("secret_pair")
        return f"{m.group(1)}[REDACTED:secret_pair]"

    text = _PAIR.sub(pair, text)

    def entropic(m: re.Match[str]) -> str:
        if not _high_entropy(m.group(0)):
            return m.group(0)
        found.append("high_entropy")
        return "[REDACTED:high_entropy]"

    text = _CANDIDATE.sub(entropic, text)
    return Scrubbed(text, tuple(found))


# `token: none`, `password: required` ... are talk about a field, not a value of it
_NOT_A_VALUE: Final = frozenset(
    {
        "none",
        "null",
        "n/a",
        "na",
        "empty",
        "required",
        "optional",
        "unset",
        "missing",
        "column",
        "field",
        "bearer",
        "basic",
        "the",
        "a",
        "an",
        "is",
        "was",
        "and",
        "or",
        "of",
        "in",
        "set",
        "reset",
        "change",
    }
)
