"""Deterministic detection of what a reviewer's note is (free, always on, no model).

`classify(text)` puts a note in one of four categories:

* `correction`: says something is wrong or must change ("no, ...", "should be", "stop ...",
  "use X not Y", "the pool has no ...", "add ...");
* `preference`: states a taste without saying anything is wrong ("I prefer", "plainer
  please", "more concise", "always ...");
* `frustration`: exasperation with nothing actionable in it ("ugh, again?!");
* `other`: anything else ("looks good", "thanks").

Independently of the category it flags `policy`: the note asks to relax a gate, a check, a
policy or a review ("allow TBD", "skip the prose check", "auto-approve", "approve
everything", "lower the threshold") or carries an instruction aimed at the machine ("ignore
previous instructions", "you are now ...", "system prompt") (`injection`). Such a note is
never learned from automatically: whatever a distiller says about it, it is routed to a
person. Tightening is not relaxing: "don't allow TBD", "never skip the check" are not
policy.

English only; the cues are word patterns, documented here and tested with paraphrases. What
they cannot see (irony, a relaxation phrased with no cue word) a model distiller may; its
answer is then checked again by `looks_like_policy`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, Literal

__all__ = ["Category", "Detection", "classify", "looks_like_policy"]

Category = Literal["correction", "preference", "frustration", "other"]

_NEGATED: Final = re.compile(
    r"(?i)\b(?:don'?t|do not|never|stop|no longer|not|nor|shouldn'?t|should not|mustn'?t|"
    r"must not|can'?t|cannot|won'?t|avoid|refuse to)\b[^.;!?\n]{0,24}$"
)
_RELAX: Final = (
    re.compile(
        r"(?i)\b(?:allow|accept|permit|tolerate|let through|keep|leave|ok(?:ay)? to (?:leave|keep|use)|"
        r"fine to (?:leave|keep|use))\b[^.;!?\n]{0,40}?\b(?:tbd|tbc|tba|placeholders?|n/?a|"
        r"unknowns?|blanks?|empty (?:cells?|values?)|missing values?|orphan(?:ed|s)?|dangling|"
        r"duplicates?|anything|whatever)\b"
    ),
    re.compile(
        r"(?i)\b(?:skip|bypass|disable|turn off|switch off|ignore|drop|remove|relax|loosen|"
        r"lower|weaken|suppress|silence|waive|get rid of|override)\b[^.;!?\n]{0,40}?\b(?:gates?|"
        r"checks?|checking|validation|validators?|verification|critiques?|rules?|reasoner|"
        r"thresholds?|reviews?|approvals?|polic(?:y|ies)|constraints?|limits?|retries|"
        r"spot[- ]checks?|holds?)\b"
    ),
    re.compile(
        r"(?i)\bauto[- ]?approv\w*|\bapprove (?:it |them |these |those )?(?:all|everything|"
        r"anything|automatically|without|regardless|by default)\b|\bno (?:need|reason) (?:for|to) "
        r"(?:review|check|approv|hold|verif)\w*|\bwithout (?:review|reviewing|checking|approval|"
        r"the (?:gate|check)s?)\b|\b(?:commit|publish|ship|merge) (?:it |them )?(?:anyway|"
        r"regardless|everything|all of (?:it|them)|without)\b|\b(?:stop|don'?t|do not|never) "
        r"(?:holding|checking|validating|reviewing|asking)\b"
    ),
)
_INJECTION: Final = re.compile(
    r"(?i)\b(?:ignore|disregard|forget|override)\b[^.;!?\n]{0,30}\b(?:instructions?|rules|"
    r"prompts?|guidelines|directives)\b|\byou are now\b|\bsystem prompt\b|\bnew instructions?\b|"
    r"\bact as (?:an? )?(?:admin|administrator|root|developer|system)\b|\bjailbreak\b|"
    r"\bdeveloper mode\b|</?(?:system|instructions?|data)\b|\[\[?system\]"
)
_CORRECTION: Final = re.compile(
    r"(?i)^\s*(?:no|nope|nah|wrong|incorrect|not quite|not right)\b|\b(?:wrong|incorrect|"
    r"mistaken?|mistakes?|errors?|typos?|inaccurate|invalid|bogus|should(?:n'?t| not)?(?: be| have| say| read| use)?|"
    r"must(?: not)? be|needs? to be|instead|rather than|not [\w /-]{1,30} but|stop|don'?t|do not|"
    r"never|avoid|quit|fix|change|replace|correct|swap|add|remove|delete|cut|drop|lose|tone down|"
    r"missing|lacks?|"
    r"has no|have no|doesn'?t have|does not have|isn'?t (?:in|on|a)|aren'?t (?:in|on)|"
    r"use [\w°/²³. -]{1,30}\b(?:not|instead of|rather than)\b)"
)
_PREFERENCE: Final = re.compile(
    r"(?i)\b(?:prefer(?:red|ably|ence)?|(?:i'?d|i would|we'?d|we would|would) (?:rather|like|prefer)|"
    r"i like|i want|we want|nicer|better|"
    r"please (?:use|write|keep|make|be)|always|plain(?:er)?|simpler|shorter|longer|concise|"
    r"terse|verbose|wordy|salesy|dry|drier|formal|informal|tone|style|wording|phrasing|"
    r"readab\w+|clearer|too (?:long|short|much|many|little|few|formal|casual|technical|"
    r"vague|salesy|flowery|wordy)|less \w+|more \w+|better (?:if|to|with))\b"
)
_FRUSTRATION: Final = re.compile(
    r"(?i)\b(?:ugh+|argh+|sigh|seriously|come on|ffs|wtf|annoying|annoyed|sick of|tired of|"
    r"fed up|how many times|useless|garbage|rubbish|terrible|awful|ridiculous|again\s*[?!])"
    r"|!{2,}|\?{2,}|[?!]{3,}"
)


@dataclass(frozen=True)
class Detection:
    category: Category
    policy: bool  # asks to relax a gate, a check, a policy or a review (or is an injection)
    injection: bool  # addresses the machine ("ignore previous instructions", ...)
    cues: tuple[str, ...]  # what was seen, for the record (cue names, never the text)


def _relaxes(text: str) -> bool:
    for pattern in _RELAX:
        for m in pattern.finditer(text):
            before = text[max(0, m.start() - 40) : m.start()]
            if pattern is _RELAX[2] and re.match(r"(?i)(?:stop|don'?t|do not|never)\b", m.group(0)):
                return True  # "stop checking", "don't hold": asks for less checking
            if not _NEGATED.search(before):
                return True
    return False


def looks_like_policy(text: str) -> bool:
    """The text asks to relax a gate/check/policy/review or addresses the machine."""
    return _relaxes(text) or _INJECTION.search(text) is not None


def classify(text: str) -> Detection:
    injection = _INJECTION.search(text) is not None
    policy = injection or _relaxes(text)
    corr = len(_CORRECTION.findall(text))
    pref = len(_PREFERENCE.findall(text))
    frus = len(_FRUSTRATION.findall(text))
    cues = tuple(
        name
        for name, n in (
            ("correction", corr),
            ("preference", pref),
            ("frustration", frus),
            ("policy", policy),
            ("injection", injection),
        )
        if n
    )
    category: Category
    if policy or (corr and corr >= pref):
        category = "correction"
    elif pref:
        category = "preference"
    elif corr:
        category = "correction"
    elif frus:
        category = "frustration"
    else:
        category = "other"
    return Detection(category, policy, injection, cues)
