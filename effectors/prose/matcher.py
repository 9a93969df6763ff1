"""Entity mentions: one word trie over every pool individual's labels, built once per pools.

Labels, synonyms and IRI fragments (`_` read as a space) are normalised by the shared rule,
`harness.normalize` in its "loose" form (`harness.pools.normalize_label`: NFKC, casefold,
trademark signs, accents and punctuation; the ASCII fast path below is the same rule for
ASCII text), because running text is read word by word, and matched on
whole words, longest match first, never overlapping; each mention maps back to the character
span of the original text. A plural last word ("CT scanners") is read as the singular label.
ASCII text is searched by that trie compiled into one regex, or, with the `ahocorasick-rs`
package, by a compiled Aho-Corasick automaton that finds the same matches (`_Automaton`).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import ModuleType
from typing import Any, Generic, NamedTuple, TypeVar

from harness.pools import Pools, fragment_of, normalize_label

_ahocorasick: ModuleType | None
try:  # a compiled Aho-Corasick automaton (Rust wheels); without it, the regex does the work
    import ahocorasick_rs as _ahocorasick
except ImportError:  # pragma: no cover - exercised where the package is missing
    _ahocorasick = None

__all__ = ["CachedResolver", "Cue", "CueSet", "EntityMatcher", "Mention", "plural_of"]

V = TypeVar("V")

_TOKEN = re.compile(r"[^\W_]+")
_ASCII_TOKEN = re.compile(r"[0-9a-z]+")


class Mention(NamedTuple):
    """One mention of an individual: its IRI fragment and the span in the original text."""

    individual: str
    start: int
    end: int


class _Node:
    __slots__ = ("children", "individual")

    def __init__(self) -> None:
        self.children: dict[str, _Node] = {}
        self.individual: str | None = None


def words_of(text: str) -> list[tuple[str, int, int]]:
    """Normalised words of `text` with the character span of the token each came from."""
    if text.isascii():  # the common case: lower-casing keeps offsets, tokens are [0-9a-z]+
        return [(m.group(), m.start(), m.end()) for m in _ASCII_TOKEN.finditer(text.lower())]
    out: list[tuple[str, int, int]] = []
    for m in _TOKEN.finditer(text):
        token = m.group()
        parts = [token.lower()] if token.isascii() else normalize_label(token).split()
        out += [(w, m.start(), m.end()) for w in parts]
    return out


_ALNUM = frozenset("0123456789abcdefghijklmnopqrstuvwxyz")
_MAX_TERM_WORDS = 16
_SKIP = [re.compile(rf"(?:[0-9a-z]+[^0-9a-z]+){{{k}}}[0-9a-z]+") for k in range(_MAX_TERM_WORDS)]


def _locate(low: str, word: str, pos: int, skip: int) -> int:
    """Start of the (skip+1)-th whole-word occurrence of `word` in `low` at or after `pos`."""
    end_of_text = len(low)
    while True:
        at = low.find(word, pos)
        if at < 0:  # pragma: no cover - the word list was read from this very text
            raise ValueError(f"word {word!r} not found")
        end = at + len(word)
        if (at == 0 or low[at - 1] not in _ALNUM) and (end == end_of_text or low[end] not in _ALNUM):
            if skip == 0:
                return at
            skip -= 1
        pos = at + 1


class _Locator:
    """Character spans of the words of a text, located lazily in increasing word order.

    ASCII text (the common case): words are the [0-9a-z]+ runs of the lower-cased text and
    only hits are located: the first word as the k-th whole-word occurrence after the last
    word located, the last word by skipping the words between. Other text: every token
    normalised on its own, with the span of each word kept.
    """

    def __init__(self, text: str) -> None:
        self.ascii = text.isascii()
        self.idx = 0  # words before idx are located or passed over; pos is after them
        self.pos = 0
        self.last = (-1, -1)  # (word index, start) of the last word located
        if self.ascii:
            self.low = text.lower()
            self.words: list[str] = _ASCII_TOKEN.findall(self.low)
            self.spans: list[tuple[int, int]] = []
        else:
            found = words_of(text)
            self.low = ""
            self.words = [w for w, _, _ in found]
            self.spans = [(s, e) for _, s, e in found]

    def span(self, i: int, j: int) -> tuple[int, int]:
        """Span of words i..j (i never before a word already located, except the last)."""
        if not self.ascii:
            return self.spans[i][0], self.spans[j][1]
        if self.last[0] == i:
            at = self.last[1]
        else:
            w = self.words[i]
            at = _locate(self.low, w, self.pos, self.words[self.idx:i].count(w))
            self.idx, self.pos, self.last = i + 1, at + len(w), (i, at)
        if j == i:
            return at, at + len(self.words[i])
        m = _SKIP[j - i].match(self.low, at)
        assert m is not None
        return at, m.end()

    def next_token(self, i: int) -> int:
        """The first word after word i that does not come from the same token."""
        j = i + 1
        while not self.ascii and j < len(self.words) and self.spans[j][0] == self.spans[i][0]:
            j += 1
        return j


class Cue(NamedTuple):
    """A hit of a caller's phrase: its payload (an id the caller gave) and span."""

    payload: int
    start: int
    end: int


def _phrases(node: _Node, prefix: str = "") -> list[str]:
    out = [prefix] if node.individual is not None and prefix else []
    for word, child in node.children.items():
        out += _phrases(child, f"{prefix} {word}" if prefix else word)
    return out


_ES_ENDINGS = ("s", "x", "z", "ch", "sh")


def plural_of(word: str) -> str:
    """The regular English plural of a (lower-case) word: "-es" after s, x, z, ch and sh
    ("VAV boxes", "transfer switches"), else "-s"."""
    return word + ("es" if word.endswith(_ES_ENDINGS) else "s")


def _trie_regex(root: _Node, plurals: bool | set[str]) -> re.Pattern[str]:
    """One regex for every phrase of a word trie, factored character by character (so the
    engine never tries phrases one by one): words joined by any non-alphanumeric run, whole
    words only, greedy (a longer phrase is tried before its prefix). `plurals`: a phrase's
    last word may take an "s" (as `_plural` reads it); a set: the phrases that may.

    The pattern is searched in " " + `text.translate(_FOLD)`, where every character but
    [0-9a-z] is a space: it starts at the space before a phrase and group 1 is the phrase. Leading with a
    literal (instead of a look-behind) lets `re` skip to the spaces before it tries the trie."""
    chars: dict[str, Any] = {}
    for phrase in _phrases(root):
        node = chars
        for ch in phrase:
            node = node.setdefault(ch, {})
        node[""] = phrase

    def gen(node: dict[str, Any], word: str) -> str:
        alts = [(" +" + gen(child, "")) if ch == " " else
                (re.escape(ch) + gen(child, word + ch))
                for ch, child in sorted(node.items()) if ch]
        if "" in node:
            plural = plurals if isinstance(plurals, bool) else node[""] in plurals
            alts.append(re.escape(plural_of(word)[len(word):]) + "?"
                        if plural and len(word) >= 3 and not word.endswith(_ES_ENDINGS)
                        else "(?:es)?" if plural and len(word) >= 3 else "")
        return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"

    body = gen(chars, "") if chars else r"(?!x)x"
    return re.compile(rf" ({body})(?![0-9a-z])")


# ASCII text with its letters lower-cased and every other character but a digit a space: the
# same length (spans carry over) and the same words
_FOLD = str.maketrans({c: (chr(c).lower() if chr(c).isalnum() else " ") for c in range(128)})


_GAP = "\x01"  # marks a run of two or more separators in the automaton's haystack
_DFA_BYTES = 200_000  # patterns' total size up to which the automaton is a DFA (~13 MB)


class _Automaton(Generic[V]):
    """`regex.finditer(low)` of a `_trie_regex`, where `low` is " " + `text.translate(_FOLD)`,
    found by a compiled Aho-Corasick automaton: (the value of the matched text, start, end)
    of group 1, in the text's offsets (one less than `low`'s).

    The automaton holds " " + each text the regex can match (`phrases`: words joined by one
    space, plural forms included); it finds the leftmost-longest occurrence and moves on past
    it, as the regex does. It searches `low` with each run of two or more spaces starting
    with `_GAP` instead ("a, b" folds to "a  b", searched as "a" + `_GAP` + " b": the same
    offsets, and the word after a run still has its space before it). What the automaton
    cannot express is settled per occurrence; where an occurrence may hide what the regex
    finds, the regex takes the rest of the text over from there:

    * the whole-word end (the regex's `(?![0-9a-z])`): an occurrence that ends inside a word
      and has no space inside it means no phrase starts there (every shorter one ends inside
      that word too); one with a space inside may hide a shorter phrase: the regex;
    * words split by a run of separators (the regex joins words by ` +`): the automaton also
      holds " " + each proper word prefix of a phrase + `_GAP`, which is the longest
      occurrence wherever the regex's match may run on across a run; there the regex's own
      match decides (one that ends with the prefix is taken as is; no match after a one-word
      prefix means none starts there; anything else: the regex).

    So the matches are the regex's exactly. `values` maps each text the regex can match to
    its value; `value` gives the value of any other matched text (words joined by several
    separators). `None` from `build` when the package is missing (the caller keeps the
    regex)."""

    def __init__(self, regex: re.Pattern[str], values: dict[str, V],
                 value: Callable[[str], V]) -> None:
        assert _ahocorasick is not None
        self.regex = regex
        self.value = value
        keys = sorted(values)
        gaps = sorted({" ".join(words[:k]) for words in (p.split(" ") for p in keys)
                       for k in range(1, len(words))})
        # per pattern: the phrase's value (None: a prefix then a run), whether it holds a space
        self.values: list[V | None] = [*(values[k] for k in keys), *(None for _ in gaps)]
        self.multi = [" " in p for p in (*keys, *gaps)]
        kind = _ahocorasick.MatchKind.LeftmostLongest
        patterns = [(" " + p).encode() for p in keys] + [(" " + p + _GAP).encode() for p in gaps]
        # over bytes (the haystack is ASCII: byte offsets are character offsets), as a DFA
        # while it stays small (~66 bytes of memory per byte of the patterns): a third
        # fewer instructions a scan than the default contiguous NFA over `str`
        impl = _ahocorasick.Implementation.DFA if sum(map(len, patterns)) <= _DFA_BYTES \
            else _ahocorasick.Implementation.ContiguousNFA
        self.ac = _ahocorasick.BytesAhoCorasick(patterns, matchkind=kind, implementation=impl)

    @classmethod
    def build(cls, regex: re.Pattern[str], values: dict[str, V],
              value: Callable[[str], V]) -> _Automaton[V] | None:
        return cls(regex, values, value) if _ahocorasick is not None else None

    def finditer(self, low: str) -> list[tuple[V, int, int]]:
        """(value, start - 1, end - 1) of group 1 of each `regex.finditer(low)` match
        (`low` is ASCII: the folded text of ASCII text)."""
        values, multi = self.values, self.multi
        hay = (low + " ").replace("  ", _GAP + " ")  # ends with a space: hay[e] exists
        out: list[tuple[V, int, int]] = []
        for k, s, e in self.ac.find_matches_as_indexes(hay.encode("ascii")):
            v = values[k]
            if v is not None:
                if hay[e] <= " ":  # a space or _GAP: the word ends there
                    out.append((v, s, e - 1))
                elif multi[k]:
                    break  # a shorter phrase (and what follows it) may hide inside
                continue
            m = self.regex.match(low, s)  # a phrase's prefix, then a run of separators
            if m is None:
                if multi[k]:
                    break
            elif m.end(1) == e - 1:
                out.append((self.value(m.group(1)), s, e - 2))
            else:
                break
        else:
            return out
        value = self.value
        out += [(value(m.group(1)), m.start(1) - 1, m.end(1) - 1)
                for m in self.regex.finditer(low, s)]
        return out


def _copy_trie(src: _Node, dst: _Node) -> None:
    for word, child in src.children.items():
        node = dst.children.setdefault(word, _Node())
        if child.individual is not None and node.individual is None:
            node.individual = child.individual
        _copy_trie(child, node)


def _terminals(node: _Node, prefix: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], str]]:
    """(words, payload) of every phrase of a word trie."""
    out = [(prefix, node.individual)] if node.individual is not None and prefix else []
    for word, child in node.children.items():
        out += _terminals(child, (*prefix, word))
    return out


def _overlap(mention: tuple[str, ...], cue: tuple[str, ...]) -> bool:
    """Could a match of `mention` and a match of `cue` share a word, other than the cue lying
    inside the mention (a cue inside a mention is dropped either way)?"""
    lm, lc = len(mention), len(cue)
    for d in range(1 - lc, lm):  # the cue starts d words after the mention
        lo, hi = max(0, d), min(lm, d + lc)
        inside = d >= 0 and d + lc <= lm
        if not inside and all(mention[k] == cue[k - d] for k in range(lo, hi)):
            return True
    return False


class _Combined:
    """Mentions and cue phrases in one regex pass over ASCII text.

    The union of the two tries finds, at each word, the longest phrase of either kind. That
    is what two separate scans find (mentions; cue hits outside mentions) unless a mention
    and a cue could overlap other than the cue lying inside the mention: phrases that could
    are `risky`, and a text where one matches is scanned the two ways separately."""

    def __init__(self, matcher: EntityMatcher, cues: CueSet) -> None:
        self.cues = cues  # kept alive: the cache is keyed by its id
        root = _Node()
        _copy_trie(matcher._root, root)
        _copy_trie(cues.root, root)
        mentions = _terminals(matcher._root)
        self.regex = _trie_regex(root, plurals={" ".join(words) for words, _ in mentions})
        phrases = _terminals(cues.root)
        by_word: dict[str, set[int]] = {}
        for k, (words, _) in enumerate(phrases):
            for w in words:
                by_word.setdefault(w, set()).add(k)
        risky_cues: set[int] = set()
        risky_mentions: set[tuple[str, ...]] = set()
        for words, _ in mentions:
            variants = [words]
            if len(words[-1]) >= 3:
                variants.append((*words[:-1], plural_of(words[-1])))
            for v in variants:
                for k in sorted(set().union(*(by_word.get(w, set()) for w in v))):
                    if _overlap(v, phrases[k][0]):
                        risky_cues.add(k)
                        risky_mentions.add(words)
        # matched text (lower-cased, words joined by one space) -> (individual, cue, risky);
        # a mention wins over a cue of the same words (the cue would lie inside it)
        self.table: dict[str, tuple[str | None, int, bool]] = {}
        for k, (words, payload) in enumerate(phrases):
            self.table[" ".join(words)] = (None, int(payload), k in risky_cues)
        for key, (individual, words) in matcher._interpretations().items():
            self.table[key] = (individual, -1, words in risky_mentions)
        self.automaton = _Automaton.build(self.regex, self.table, self.lookup) \
            if matcher.automaton else None
        # per automaton pattern, what `_scan_combined`'s fast loop makes of a whole-word
        # occurrence: the individual (a mention), the cue payload (a hit), or None (a risky
        # phrase, or a prefix then a run: the general path)
        self.kinds: list[str | int | None] = []
        if self.automaton is not None:
            self.kinds = [None if e is None or e[2] else e[0] if e[0] is not None else e[1]
                          for e in self.automaton.values]

    def finditer(self, low: str) -> Iterable[tuple[tuple[str | None, int, bool], int, int]]:
        """(table entry, start, end) of each phrase found in `low` (text offsets)."""
        if self.automaton is not None:
            return self.automaton.finditer(low)
        table = self.table
        return ((table.get(m.group(1)) or self.lookup(m.group(1)), m.start(1) - 1,
                 m.end(1) - 1) for m in self.regex.finditer(low))

    def lookup(self, matched: str) -> tuple[str | None, int, bool]:
        try:
            return self.table[matched]
        except KeyError:
            return self.table[" ".join(_ASCII_TOKEN.findall(matched))]


class CueSet:
    """Phrases to find alongside mentions (normalised, whole words, longest first)."""

    def __init__(self, phrases: Iterable[tuple[str, int]]) -> None:
        self.root = _Node()
        self.depth = 0
        for text, payload in phrases:
            words = normalize_label(text).split()
            if not 0 < len(words) <= _MAX_TERM_WORDS:
                continue
            node = self.root
            for w in words:
                node = node.children.setdefault(w, _Node())
            if node.individual is None:
                node.individual = str(payload)
            self.depth = max(self.depth, len(words))
        self.regex = _trie_regex(self.root, plurals=False)
        self._by_text = {" ".join(words): int(p) for words, p in _terminals(self.root)}

    def payload(self, matched: str) -> int:
        try:
            return self._by_text[matched]
        except KeyError:
            pass
        node = self.root
        for w in _ASCII_TOKEN.findall(matched):
            node = node.children[w]
        assert node.individual is not None
        return int(node.individual)


def _longest(node: _Node, words: Sequence[str], i: int, depth: int) -> tuple[int, str] | None:
    """The longest phrase of a (plain) trie starting at word i, `node` being words[i]'s."""
    hit = (i, node.individual) if node.individual is not None else None
    j, n = i + 1, len(words)
    while j < n and j - i < depth:
        nxt = node.children.get(words[j])
        if nxt is None:
            break
        node = nxt
        if node.individual is not None:
            hit = (j, node.individual)
        j += 1
    return hit


def _plural(children: dict[str, _Node], word: str) -> _Node | None:
    """"CT scanners" is a mention of "CT scanner" and "VAV boxes" one of "VAV box": a plural
    last word reads as the label (`plural_of`)."""
    if len(word) > 3 and word[-1] == "s":
        for stem in (word[:-1], word[:-2]) if word.endswith("es") else (word[:-1],):
            node = children.get(stem)
            if node is not None and node.individual is not None and plural_of(stem) == word:
                return node
    return None


def _inside(mentions: Sequence[Mention], pos: int) -> bool:
    i = bisect_right(mentions, pos, key=lambda m: m.start) - 1
    return i >= 0 and mentions[i].start <= pos < mentions[i].end


class EntityMatcher:
    """Finds mentions of pool individuals in text; built once per pools, then reused."""

    def __init__(self, pools: Pools, automaton: bool = True,
                 abbreviations: Mapping[str, str] | None = None,
                 keep: Callable[[str, list[str]], bool] | None = None) -> None:
        """`automaton`: find phrases in ASCII text with the Aho-Corasick automaton when the
        `ahocorasick-rs` package is installed (False: always the regex; the same matches).

        The phrases are every individual's labels, its IRI fragment, and the pack's aliases
        (`pools.aliases`, `[ontology.aliases]`: "AHU", "linac"); `abbreviations` (short word
        -> the word it stands for, `[prose] abbreviations`: "Std" = "Standard") add each
        phrase with those words abbreviated ("ASHRAE Std 62.1"); `keep(individual, words)`
        False leaves a phrase out (`[prose] exclude_classes`, `exclude_labels`)."""
        self.automaton = automaton
        self._root = _Node()
        self.depth = 0
        self.terms = 0  # distinct normalised labels (the vocabulary size)
        short: dict[str, list[str]] = {}
        for abbr, word in (abbreviations or {}).items():
            abbr_words, full = normalize_label(abbr).split(), normalize_label(word).split()
            if len(abbr_words) == 1 and len(full) == 1 and abbr_words != full:
                short.setdefault(full[0], []).append(abbr_words[0])
        aliases: dict[str, list[str]] = {}
        for text, name in sorted(pools.aliases.items()):
            aliases.setdefault(name, []).append(text)
        bound = None if pools.mentionable is None else set(pools.mentionable)
        for name in sorted(pools.individuals):
            info = pools.individuals[name]
            if info.deprecated or (bound is not None and name not in bound):
                continue  # deprecated, or not what the pack binds: no mention (issue 27)
            # a key that is a whole IRI (its fragment collides, issue 27): labels only
            frag = () if info.iri and fragment_of(info.iri) != name else (name.replace("_", " "),)
            for text in (*info.labels, *frag, *aliases.get(name, ())):
                words = normalize_label(text).split()
                if 0 < len(words) <= _MAX_TERM_WORDS and (keep is None or keep(name, words)):
                    self._add(words, name)
                    for k, word in enumerate(words):
                        for a in short.get(word, []):
                            self._add([*words[:k], a, *words[k + 1:]], name)
        self._add_classes(pools, keep)
        self._regex = _trie_regex(self._root, plurals=True)
        self._by_text = {k: ind for k, (ind, _) in self._interpretations().items()}
        self._automaton = _Automaton.build(self._regex, self._by_text, self._individual_of) \
            if automaton else None
        self._combined: dict[int, _Combined] = {}

    def _add_classes(self, pools: Pools, keep: Callable[[str, list[str]], bool] | None) -> None:
        """The classes the pack binds (`pools.mentionable_classes`: under a class column's
        root), by their labels and IRI fragment (`_` read as a space: "Air Handling Unit"),
        each mention named by the class's IRI (issue 27). An individual's phrase wins."""
        for cls in pools.mentionable_classes:
            info = pools.classes[cls]
            name = pools.class_mention(cls)
            frag = fragment_of(info.iri) if info.iri else cls
            for text in (*info.labels, frag.replace("_", " ")):
                words = normalize_label(text).split()
                if 0 < len(words) <= _MAX_TERM_WORDS and (keep is None or keep(name, words)):
                    self._add(words, name)

    def _add(self, words: list[str], individual: str) -> None:
        node = self._root
        for w in words:
            node = node.children.setdefault(w, _Node())
        if node.individual is None:  # first (sorted) individual wins an ambiguous phrase
            node.individual = individual
            self.terms += 1
        self.depth = max(self.depth, len(words))

    def _interpretations(self) -> dict[str, tuple[str, tuple[str, ...]]]:
        """Matched text -> (individual, the phrase's words) for every text the regex can
        match, words joined by one space: a phrase as such wins over a plural read as its
        singular (as the regex tries it first)."""
        out: dict[str, tuple[str, tuple[str, ...]]] = {}
        terms = _terminals(self._root)
        for words, ind in terms:
            if len(words[-1]) >= 3:
                out[" ".join((*words[:-1], plural_of(words[-1])))] = (ind, words)
        for words, ind in terms:
            out[" ".join(words)] = (ind, words)
        return out

    def find(self, text: str) -> list[Mention]:
        """Every mention, left to right, longest match first, never overlapping."""
        return self.scan(text)[0]

    def scan(self, text: str, cues: CueSet | None = None) -> tuple[list[Mention], list[Cue]]:
        """The mentions, and the hits of `cues` (phrases the caller looks for, such as the
        words of a value claim) outside mentions.

        ASCII text (the common case) is matched by the trie compiled into one regex over the
        lower-cased text (greedy, so the longest term wins; or by `_Automaton`, which finds
        what the regex finds), together with the cues when no
        mention can overlap a cue (see `_Combined`); other text by walking the trie over its
        normalised words (written out inline: it is the slow path's hot loop)."""
        if text.isascii():
            return self._scan_ascii(text, cues)
        loc = _Locator(text)
        words = loc.words
        first = self._root.children
        depth = self.depth
        cue_first = cues.root.children if cues else {}
        cue_depth = cues.depth if cues else 0
        assert cue_depth < _MAX_TERM_WORDS and self.depth <= _MAX_TERM_WORDS
        mentions: list[Mention] = []
        hits: list[Cue] = []
        i, n, cue_from = 0, len(words), 0
        while i < n:
            w = words[i]
            if i >= cue_from and w in cue_first:
                hit = _longest(cue_first[w], words, i, cue_depth)
                if hit is not None:
                    hits.append(Cue(int(hit[1]), *loc.span(i, hit[0])))
                    cue_from = hit[0] + 1
            node = first.get(w) or _plural(first, w)
            if node is None:
                i += 1
                continue
            best = (i, node.individual) if node.individual is not None else None
            j = i + 1
            while j < n and j - i < depth:
                nxt = node.children.get(words[j]) or _plural(node.children, words[j])
                if nxt is None:
                    break
                node = nxt
                if node.individual is not None:
                    best = (j, node.individual)
                j += 1
            if best is None:
                i += 1
                continue
            end_word, individual = best
            mentions.append(Mention(individual, *loc.span(i, end_word)))
            i = cue_from = loc.next_token(end_word)
        if hits and mentions:
            hits = [h for h in hits if not _inside(mentions, h.start)]
        return mentions, hits

    def anchors(self, text: str, cues: CueSet) -> tuple[list[Anchor], list[Hit]]:
        """`scan` for the prose gate's hot path: mentions as (start, end, individual, False),
        hits as (payload, start, end) tuples."""
        if text.isascii():
            found = _scan_combined(self._combine(cues), text)
            if found is not None:
                return found
        mentions, hits = self.scan(text, cues)
        return [(m[1], m[2], m[0], False) for m in mentions], [(h[0], h[1], h[2]) for h in hits]

    def _combine(self, cues: CueSet) -> _Combined:
        combined = self._combined.get(id(cues))
        if combined is None or combined.cues is not cues:
            combined = self._combined[id(cues)] = _Combined(self, cues)
        return combined

    def _scan_ascii(self, text: str, cues: CueSet | None) -> tuple[list[Mention], list[Cue]]:
        if cues is not None:
            found = _scan_combined(self._combine(cues), text)
            if found is not None:
                return ([Mention(ind, s, e) for s, e, ind, _ in found[0]],
                        [Cue(*h) for h in found[1]])
        low = " " + text.translate(_FOLD)  # the regexes start at the space before a phrase
        if self._automaton is not None:
            mentions = [Mention(ind, s, e) for ind, s, e in self._automaton.finditer(low)]
        else:
            by_text = self._by_text
            mentions = []
            for m in self._regex.finditer(low):
                matched = m.group(1)
                individual = by_text.get(matched) or self._individual(matched)
                mentions.append(Mention(individual, m.start(1) - 1, m.end(1) - 1))
        if cues is None:
            return mentions, []
        hits = [Cue(cues.payload(m.group(1)), m.start(1) - 1, m.end(1) - 1)
                for m in cues.regex.finditer(low)]
        if hits and mentions:
            hits = [h for h in hits if not _inside(mentions, h.start)]
        return mentions, hits

    def _individual_of(self, matched: str) -> str:
        return self._by_text.get(matched) or self._individual(matched)

    def _individual(self, matched: str) -> str:
        """The individual of a regex match: the trie walked over the matched words."""
        node = self._root
        for w in _ASCII_TOKEN.findall(matched):
            nxt = node.children.get(w) or _plural(node.children, w)
            assert nxt is not None
            node = nxt
        assert node.individual is not None
        return node.individual

    def mentioned(self, text: str) -> set[str]:
        return {m.individual for m in self.find(text)}


Anchor = tuple[int, int, str, bool]  # (start, end, individual or row key, is a row key)
Hit = tuple[int, int, int]  # (cue payload, start, end)


_DONE, _RISKY, _GENERAL = 0, 1, 2  # how `_scan_automaton` ended


def _scan_automaton(combined: _Combined, automaton: _Automaton[Any], low: str
                    ) -> tuple[list[Anchor], list[Hit], int]:
    """`_scan_combined` by the automaton: `_Automaton.finditer` and its caller's loop in one
    loop. The status says `_DONE`, `_RISKY` (a risky phrase matched) or `_GENERAL` (the
    automaton would hand over to the regex: take the general path)."""
    hay = (low + " ").replace("  ", _GAP + " ")
    kinds, multi, values = combined.kinds, automaton.multi, automaton.values
    found: list[Anchor] = []
    cues: list[Hit] = []
    x: str | int | None
    for k, s, e in automaton.ac.find_matches_as_indexes(hay.encode("ascii")):
        x = kinds[k]
        end = e - 1
        if x is None or hay[e] > " ":  # not a plain phrase on whole words
            if values[k] is not None:
                if hay[e] <= " ":
                    return found, cues, _RISKY
                if multi[k]:
                    return found, cues, _GENERAL  # a shorter phrase may hide inside
                continue
            m = automaton.regex.match(low, s)  # a phrase's prefix, then a run of separators
            if m is None:
                if multi[k]:
                    return found, cues, _GENERAL
                continue
            if m.end(1) != end:
                return found, cues, _GENERAL
            entry = combined.lookup(m.group(1))
            if entry[2]:
                return found, cues, _RISKY
            x, end = (entry[0] if entry[0] is not None else entry[1]), e - 2
        if x.__class__ is str:
            found.append((s, end, x, False))
        else:
            cues.append((x, s, end))  # type: ignore[arg-type]
    return found, cues, _DONE


def _scan_combined(combined: _Combined, text: str) -> tuple[list[Anchor], list[Hit]] | None:
    """Mentions (as anchors) and cue hits of ASCII text in one pass; None when a risky
    phrase matched (see `_Combined`)."""
    low = " " + text.translate(_FOLD)
    if combined.automaton is not None:
        found, cues, status = _scan_automaton(combined, combined.automaton, low)
        if status == _DONE:
            return found, cues
        if status == _RISKY:
            return None
    mentions: list[Anchor] = []
    hits: list[Hit] = []
    for entry, start, end in combined.finditer(low):
        if entry[2]:
            return None
        if entry[0] is not None:
            mentions.append((start, end, entry[0], False))
        else:
            hits.append((entry[1], start, end))
    return mentions, hits


class CachedResolver:
    """`Pools.resolve` with a memo: cells repeat across artifacts, normalising them does not
    need to. Bounded: the memo starts over past `size` entries."""

    def __init__(self, pools: Pools, size: int = 100_000) -> None:
        self.pools = pools
        self.size = size
        self.memo: dict[str, str | None] = {}

    def __call__(self, value: object) -> str | None:
        if not isinstance(value, str):
            return None
        try:
            return self.memo[value]
        except KeyError:
            pass
        if len(self.memo) >= self.size:
            self.memo.clear()
        out = self.memo[value] = self.pools.resolve(value)
        return out
