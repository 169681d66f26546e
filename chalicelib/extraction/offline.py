"""The offline extractor: rules over the user's own messages, no model.

``OfflineExtractor.extract(window) -> list[Candidate]`` reads each user message sentence by
sentence and keeps what a later session needs:

- the speaker's name ("I'm Priya", "call me Tomás", "Kenji here, SRE"), their pronouns and role;
- facts about the speaker ("I prefer ...", "I manage ...", "my manager is ..."), written in the
  third person with the speaker's name when the window gives it ("Priya prefers TypeScript"),
  "the user" otherwise, always with the ``user`` entity (a first-person query maps to it);
- statements of fact that name something specific: a capitalised name, a number, a date, or a
  dotted, slashed or hyphenated token (hosts, paths, versions, URLs stay whole);
- "remember that ..." items, standing instructions ("always ...", "never ...", "keep answers
  short ...") as rule items, corrections ("pnpm, not npm") and a one-word "yes, X" that accepts
  the assistant's proposal naming X.

A change keeps its new value only ("moved from June 30 to July 20" -> "moved to July 20";
"It was June 30 before" is dropped). Never kept: questions, greetings and thanks, replies
("yes", "not yet"), task instructions, past history ("X was too awkward"), ephemeral state
("right now", "on call", "again"), sentences that only point back ("I like that explanation"),
anything naming a secret. Every word of a memory comes from the transcript, apart from the
speaker's name and the few words that rewrite a sentence in the third person.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import patterns
from .parse import Candidate
from .transcript import Window

MAX_TEXT = 200  # characters of one extracted memory
MAX_SENTENCE = 600  # characters: a longer "sentence" holds no one fact (and is not split, so work stays linear)
USER = "user"  # the entity a first-person query maps to (search.analyzers.USER_HANDLE)

# RE2 (``patterns``): Python's Unicode classes for words and spaces; \b is ASCII there
_S, _W = f"[{patterns.SPACE}]", patterns.WORD
_NAME = r"\p{Lu}[\p{Ll}'\x{2019}-]+(?:[ ]\p{Lu}[\p{Ll}'\x{2019}-]+)?"
_SENTENCE_END = patterns.compile(rf"[.!?]+(?:{_S}+|\z)|\n+")
_GREETING = patterns.compile(rf"(?i)^(?:hi|hey|hello|ok|okay|so|also|and|but|oh|well|anyway|actually|btw)"
                             rf"(?:{_S}+there)?(?:,|!|{_S}+-)?{_S}+")
_SELF_NAME = patterns.compile(rf"(?i:my{_S}+name{_S}+is|my{_S}+name's|call{_S}+me|i{_S}+go{_S}+by|i'm|i\x{{2019}}m"
                              rf"|i{_S}+am|this{_S}+is){_S}+(?P<name>{_NAME})(?:$|[^{_W}])")
_HERE_NAME = patterns.compile(rf"^(?P<name>{_NAME}){_S}+here(?:$|[^{_W}])")
_PRONOUNS = patterns.compile(r"(?i)\((?P<p>(?:she|he|they|xe|ze)/(?:her|him|them|hers|his|theirs|xem|zir))\)")
_REMEMBER = patterns.compile(rf"(?i)^(?:please{_S}+)?(?:remember|note|keep in mind)(?:{_S}+that|{_S}*:)?{_S}+"
                             r"(?P<fact>.+)$")
_RULE = patterns.compile(rf"(?i)^(?:please{_S}+)?(?:from now on,?{_S}+|going forward,?{_S}+)?"
                         rf"(?P<rule>(?:always|never|don't ever|do not ever){_S}+.+)$")
_FROM_NOW = patterns.compile(rf"(?i)^(?:from now on|going forward),?{_S}+(?P<rule>.+)$")
_STYLE = patterns.compile(rf"(?i)^(?:please{_S}+)?(?P<rule>(?:(?:keep|make|write|give|format){_S}+"
                          rf"(?:your{_S}+|the{_S}+)?(?:answers|replies|responses|summaries|explanations|messages"
                          rf"|commit messages)"
                          rf"|(?:don't|do not){_S}+use){_S}.*)$")
_LETS = patterns.compile(rf"(?i)^let's{_S}+(?:go{_S}+with|use|stick{_S}+with|standardi[sz]e{_S}+on){_S}")
_CORRECTION = patterns.compile(rf"(?i:^(?:use{_S}+|we{_S}+use{_S}+|it's{_S}+)?)(?P<x>[{_W}][{_W}.@/+-]*),?{_S}+"
                               rf"not{_S}+(?P<y>[{_W}][{_W}.@/+-]*)(?:,?{_S}+please)?[.!]?$")
_CONFIRM = patterns.compile(rf"(?i)^(?:yes|yep|yeah|sure)[,:]?{_S}+(?P<v>[^{patterns.SPACE}.,!?]+)[.!]?$")
_PROPOSAL = patterns.compile(rf"(?i)(?:should i|shall i|do you want me to|want me to|would you like me to){_S}+"
                             r"(?P<act>[^?.!]+)\?\s*$")
_SECRET = patterns.compile(rf"(?i)(?:password|passwd|secret|api[_ -]?key|token|bearer){patterns.AFTER_WORD}")
_EPHEMERAL = patterns.compile(rf"(?i){patterns.BEFORE_WORD}(?:right now|at the moment|currently|today|tonight"
                              r"|this morning|this afternoon|this evening|just now|for now|again|on call|on leave"
                              r"|on vacation|on holiday|out of office|in a meeting|in an hour|a bit|tired|busy"
                              rf"|sick|hungry|stuck|confused|sorry|glad|lunch){patterns.AFTER_WORD}")
_SUPERSEDED = patterns.compile(rf"(?i){patterns.BEFORE_WORD}(?:was|were|used to|no longer){patterns.AFTER_WORD}")
_CHANGED = patterns.compile(rf"(?i){patterns.BEFORE_WORD}(?:was|were){_S}+(?:moved|pushed|changed|switched|"
                            r"rescheduled|postponed|renamed|bumped|delayed|set|decided|chosen|picked)"
                            rf"{patterns.AFTER_WORD}")
# "moved X from <old> to <new>" (or "to <new> from <old>"): the old value goes, the change stays
_BUT = patterns.compile(rf"(?i),?{_S}+(?:but|whereas){_S}+")
_FROM_TO = patterns.compile(rf"(?i)(?P<keep>(?:mov|push|chang|switch|migrat|bump|slipp|slid|postpon|reschedul|"
                            rf"shift|upgrad|downgrad|renam|delay)[a-z]*(?:{_S}+[^{patterns.SPACE}]+){{0,4}}?){_S}+from{_S}+"
                            rf"[^,;]{{1,60}}?{_S}+to{_S}")
_TO_FROM = patterns.compile(rf"(?i)(?P<keep>(?:mov|push|chang|switch|migrat|bump|slipp|slid|postpon|reschedul|"
                            rf"shift|upgrad|downgrad|renam|delay)[a-z]*{_S}+(?:[^{patterns.SPACE}]+{_S}+){{0,4}}?to{_S}+"
                            rf"[^,;]{{1,60}}?){_S}+from{_S}+[^,;]{{1,60}}?(?:,|;|$)")
_OLD_VALUE = patterns.compile(rf"(?i){_S}*\((?:was|previously|formerly|originally)[^)]*\)"
                              rf"|,{_S}*(?:previously|formerly|originally){_S}[^,;]*")
# a clause ends where a reason, a contrast or an instruction to the assistant begins
_TAIL = patterns.compile(rf"(?i)(?:,{_S}*|{_S}+)(?:so|because|since|although|though|which|as that){_S}"
                         rf"|,{_S}*(?:don't|do not|please|that's|that is|thanks|thank you|not)(?:$|[^{_W}])")
_SPECIFIC = patterns.compile(rf"[{patterns.DIGIT}]|[{_W}][./@:_+-][{_W}]|(?:^|{_S})/[{_W}]|\p{{Lu}}|`[^`]+`")



def _words_set(text: str) -> frozenset[str]:
    return frozenset(text.split())


_NOT_VALUES = _words_set("no now yet really sure that this it me you")
_REPLIES = _words_set("yes yeah yep no nope ok okay sure right great perfect cool nice awesome thanks thank whatever "
                     "noted good fine lol haha")
_IMPERATIVE = _words_set(
    "point split leave book keep summarise summarize review add use make write send check run show explain tell "
    "give put set create update fix delete remove don't do let let's help find open try go start stop draft copy "
    "ping call ask remind schedule move merge deploy build test install upgrade change rename look please can "
    "could would will should pick choose plan read see consider sort list grab bump drop wait note")
_POINTERS = _words_set("it its it's they them these those this that there's he she everything everyone "
                      "that's this's")
_FIRST_VERBS = _words_set(
    "prefer like love hate dislike enjoy want use manage lead own run handle do work live send write "
    "maintain speak report teach mentor cover avoid joined moved relocated")
_ADVERBS = _words_set("really usually always never mostly also only generally strongly")
_AM_NEXT = _words_set(
    "a an the based from in on responsible part picking taking leading working running managing joining "
    "handling owning building maintaining covering now allergic vegetarian vegan")
_FIRST_PERSON = _words_set("i i'm i've i'd i'll my me")
_CAPITALIZE = _words_set("the a an our we we're everything all each every half most some there their")
_PRONOUN_MAP = {"my": "their", "me": "them", "mine": "theirs", "myself": "themselves", "I": "they",
                "I'm": "they're", "I\u2019m": "they're", "I've": "they've", "I'll": "they'll"}


@dataclass(frozen=True)
class Speaker:
    """Who the user is: ``name`` as given ("Grace Okafor") or None."""

    name: str | None

    @property
    def subject(self) -> str:
        return self.name or "The user"

    @property
    def possessive(self) -> str:
        return f"{self.name}'s" if self.name else "The user's"

    @property
    def entities(self) -> list[str]:
        return [USER, self.name.lower()] if self.name else [USER]


def _words(text: str) -> list[str]:
    return text.split()


def _bare(word: str) -> str:
    return word.strip(".,;:!?()\"'“”").lower().replace("\u2019", "'")


def _finish(text: str, capitalize: bool = False) -> str:
    """One sentence: single spaces, trimmed of separators, a final full stop."""
    text = " ".join(text.split()).strip(" ,;:-")
    if not text:
        return ""
    if capitalize or _bare(_words(text)[0]) in _CAPITALIZE:
        text = text[0].upper() + text[1:]
    return text if text[-1] in ".!?" else text + "."


def speaker(window: Window) -> Speaker:
    """The name the user gives for themselves anywhere in ``window``, else none."""
    for role, text in window.lines:
        if role != "user":
            continue
        for sentence, _ in sentences(text):
            body = _strip_greeting(sentence)
            m = _HERE_NAME.match(body) or _SELF_NAME.match(body)
            if m:
                return Speaker(m.group("name"))
    return Speaker(None)


def sentences(text: str) -> list[tuple[str, str]]:
    """``(sentence, terminator)`` pairs of ``text``: a sentence ends at ``.``, ``!`` or ``?``
    followed by a space or the end, or at a line break, so "db-staging.internal" and
    "v2.3.1" stay whole. Sentences over ``MAX_SENTENCE`` characters are left out."""
    out, pos = [], 0
    for m in _SENTENCE_END.finditer(text):
        body = text[pos:m.start()].strip()
        if body:
            out.append((body, m.group().strip()[:1]))
        pos = m.end()
    if text[pos:].strip():
        out.append((text[pos:].strip(), ""))
    return [(body, end) for body, end in out if len(body) <= MAX_SENTENCE]


def _strip_greeting(sentence: str) -> str:
    for _ in range(3):  # "Hi, ok so ..."
        m = _GREETING.match(sentence)
        if not m or m.end() >= len(sentence):
            break
        sentence = sentence[m.end():]
    return sentence


def _strip_label(sentence: str) -> str:
    """Drop a short label before a colon ("One more thing: ", "Heads up: ") when it names
    nothing specific; a label that does ("Staging DB: ...") stays."""
    head, sep, rest = sentence.partition(": ")
    if not sep or not rest.strip() or len(_words(head)) > 6:
        return sentence
    return sentence if _specific(head) else rest.strip()


def _specific(text: str) -> bool:
    """A capital letter past a word's start, a digit, or a dotted, slashed or hyphenated token
    (the first word's capital and "I" do not count)."""
    words = [w for w in _words(text) if _bare(w) not in ("i", "i'm", "i've", "i'll", "i'd")]
    return bool(words) and bool(_SPECIFIC.search(words[0][1:]) or _SPECIFIC.search(" " + " ".join(words[1:])))


def _third_person_verb(verb: str) -> str:
    if verb in ("do", "go"):
        return verb + "es"
    if verb == "have":
        return "has"
    if verb.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if verb.endswith("y") and len(verb) > 1 and verb[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def _pronouns_out(words: list[str]) -> list[str]:
    """First-person pronouns inside a sentence, in the third person ("my" -> "their")."""
    out = []
    for w in words:
        core = w.strip(".,;:!?()\"'")
        repl = _PRONOUN_MAP.get(core) or (_PRONOUN_MAP.get(core.lower()) if core.lower() != "i" else None)
        out.append(w.replace(core, repl, 1) if repl and core else w)
    return out


def _first_person(words: list[str], who: Speaker, *, strict: bool) -> str | None:
    """``words`` (a clause the user said about themselves: "I ...", "I'm ...", "my ...") in the
    third person, or None when it is not one (or, ``strict``, not a kind worth keeping: a verb of
    preference, role or habit; "I'm" followed by a role, a team or a place)."""
    w0 = _bare(words[0])
    if w0 == "my" and len(words) >= 3:
        return " ".join([who.possessive, *_pronouns_out(words[1:])])
    if w0 in ("i'm", "i") and (w0 == "i'm" or _bare(words[1]) == "am"):
        rest = words[1:] if w0 == "i'm" else words[2:]
        if not rest or (strict and _bare(rest[0]) not in _AM_NEXT):
            return None
        return " ".join([who.subject, "is", *_pronouns_out(rest)])
    if w0 == "i'd" and len(words) > 2 and _bare(words[1]) in ("rather", "prefer"):
        return " ".join([who.subject, "would", *_pronouns_out(words[1:])])
    if w0 != "i":
        return None
    i, adverbs = 1, []
    while i < len(words) - 1 and _bare(words[i]) in _ADVERBS:
        adverbs.append(words[i])
        i += 1
    verb = _bare(words[i]) if i < len(words) else ""
    if verb in ("don't", "dont") and i + 1 < len(words):
        verb, adverbs, i = _bare(words[i + 1]), [*adverbs, "doesn't"], i + 1
        conj = verb
    else:
        conj = verb if verb.endswith("ed") else _third_person_verb(verb)
    obj = _bare(words[i + 1]) if i + 1 < len(words) else ""
    moving = verb in ("moved", "relocated")
    if strict and (verb not in _FIRST_VERBS or obj in _POINTERS or obj in ("you", "your")
                   or (obj == "to") != moving):
        return None
    return " ".join([who.subject, *adverbs, conj, *_pronouns_out(words[i + 1:])])


def _rewrite_change(clause: str) -> str:
    """The new value only: "moved from A to B" -> "moved to B"; "(was A)" dropped."""
    clause = _OLD_VALUE.sub("", clause)
    m = _FROM_TO.search(clause)
    if m:
        clause = clause[:m.start()] + m.group("keep") + " to " + clause[m.end():]
    m = _TO_FROM.search(clause)
    if m:
        clause = clause[:m.start()] + m.group("keep") + clause[m.end():]
    return clause


def _split_and(clause: str) -> list[str]:
    """``clause`` split at ", and" and at an "and" that starts a new clause (a pronoun subject or
    a verb "is"/"are" within its first words), each part of two words or more."""
    start = 0
    while (i := clause.find(" and ", start)) >= 0:
        left, right = clause[:i].rstrip(" ,"), clause[i + 5:]
        rw = [_bare(w) for w in _words(right)[:4]]
        if len(_words(left)) >= 2 and len(rw) >= 2 and (
                clause[i - 1] == "," or rw[0] in ("i", "we", "they", "he", "she") or {"is", "are"} & set(rw)):
            return [left, *_split_and(right)]
        start = i + 5
    return [clause]


def _split_comma(clause: str) -> list[str]:
    """``clause`` split at a comma between two parts of three words or more when the second
    starts with a capital or a digit ("8443 is the admin UI, 8080 is the public one"); a part
    starting in lower case ("..., the project slug is web-frontend") stays with the first."""
    parts = clause.split(", ")
    out = [parts[0]]
    for p in parts[1:]:
        if len(_words(out[-1])) >= 3 and len(_words(p)) >= 3 and (p[0].isupper() or p[0].isdigit()) \
                and _bare(_words(p)[0]) not in ("i", "i'm"):
            out.append(p)
        else:
            out[-1] += ", " + p
    return out


def clauses(sentence: str) -> list[str]:
    """The clauses of one sentence worth reading on their own: its tail cut at a reason, a
    contrast or an instruction ("..., so split the work up"), then split at ";", at a clause's
    "and" and at a comma before a new subject."""
    m = _TAIL.search(sentence)
    head = sentence[:m.start()] if m else sentence
    parts, pos = [], 0
    for b in _BUT.finditer(head):
        parts.append(head[pos:b.start()])
        pos = b.end()
    out = []
    for part in [p for chunk in [*parts, head[pos:]] for p in chunk.split(";")]:
        for piece in _split_and(part.strip()):
            out += [c.strip() for c in _split_comma(piece) if c.strip()]
    return out


@dataclass(frozen=True)
class Item:
    """One clause's result: a ``candidate``, and ``join`` when it only continues the clause
    before it ("Everything moves to GitHub Actions" after "We're dropping Jenkins")."""

    candidate: Candidate
    join: bool = False


def _named_subject(words: list[str]) -> bool:
    """The clause starts with a name followed by a verb ("Maria owns the billing service")."""
    if len(words) < 3 or not words[0][:1].isupper() or not words[0].isalpha():
        return False
    if _bare(words[0]) in _CAPITALIZE | _IMPERATIVE | _REPLIES | _POINTERS:
        return False
    verb = _bare(words[1])
    return verb in ("is", "are", "has", "will", "can", "should", "must") or (
        verb.isalpha() and verb.endswith("s") and not verb.endswith("ss") and len(verb) > 3)


def _statement(clause: str, who: Speaker) -> Item | None:
    """A clause that is not about the speaker, kept when it states something specific."""
    words = _words(clause)
    first = _bare(words[0])
    if (first in _IMPERATIVE and not _LETS.match(clause)) or not (_specific(clause) or _named_subject(words)):
        return None
    if _SUPERSEDED.search(clause) and not _CHANGED.search(clause):
        return None  # history ("DynamoDB was too awkward"), or the old value of a change
    if any(_bare(w) in ("yes", "yeah", "yep") for w in words):
        return None  # a reply ("Hannah yes, Jo only for UI changes")
    moved = _pronouns_out(words)
    entities = who.entities if moved != words else []
    text = _finish(" ".join(moved))
    return Item(Candidate(text=text, entities=entities, kind="memory"), join=first in _POINTERS)


def _clause(clause: str, who: Speaker) -> Item | None:
    """The memory one clause holds, or None (see the module doc for what is never kept)."""
    clause = _rewrite_change(clause).strip(" ,;:-")
    words = _words(clause)
    if len(words) < 2 or _bare(words[0]) in _REPLIES or _bare(words[0]) in ("not", "no"):
        return None
    if _EPHEMERAL.search(clause) or _SECRET.search(clause):
        return None
    if _bare(words[0]) in _FIRST_PERSON:
        text = _first_person(words, who, strict=True)
        if text is None or _SUPERSEDED.search(text):
            return None
        tag = "preference" if any(_bare(w) in _FIRST_VERBS - {"do", "work", "run"} for w in words[:4]) else "identity"
        return Item(Candidate(text=_finish(text), entities=who.entities, tags=[tag]))
    return _statement(clause, who)


def _identity(sentence: str, who: Speaker) -> list[Item | None] | None:
    """What a sentence naming the speaker adds besides the name (remembered once, first): a role
    given after "<name> here," and pronouns in parentheses; None when the sentence does not name
    the speaker."""
    m = _HERE_NAME.match(sentence) or _SELF_NAME.match(sentence)
    if m is None or m.group("name") != who.name:
        return None
    rest = _strip_greeting(sentence[m.end() - (0 if sentence[m.end() - 1:m.end()].isalnum() else 1):].strip(" ,;:-"))
    words = _words(rest)
    if not words or _EPHEMERAL.search(rest):
        return []
    if _bare(words[0]) in ("a", "an", "the", "from", "at", "on", "in") and len(words) <= 8:
        text = f"{who.subject} is {rest}"  # "I'm Sam, a data engineer at Acme"
    elif len(words) <= 3 and rest[0].isupper() and _bare(words[0]) not in ("i", "i'm"):
        text = f"{who.possessive} role is {rest}"  # "Kenji here, SRE"
    else:
        return [_clause(c, who) for c in clauses(rest)]  # "I'm Sam, I lead the data team"
    return [Item(Candidate(text=_finish(text), entities=who.entities, tags=["identity"]))]


def _explicit(sentence: str, who: Speaker) -> Item | None:
    """"Remember that ...", a standing instruction (a rule item) or a correction ("pnpm, not
    npm"): what the user asked to be kept, whatever it names."""
    m = _REMEMBER.match(sentence)
    if m and not _bare(m.group("fact")).startswith("when"):
        words = _words(m.group("fact"))
        mine = _first_person(words, who, strict=False) if words else None
        text = _finish(mine or " ".join(_pronouns_out(words)), capitalize=True)
        return Item(Candidate(text=text, entities=who.entities if mine else [], tags=["remembered"]))
    m = _RULE.match(sentence) or _FROM_NOW.match(sentence) or _STYLE.match(sentence)
    if m:
        return Item(Candidate(text=_finish(m.group("rule"), capitalize=True), kind="rule"))
    m = _CORRECTION.match(sentence)
    if m and not {_bare(m.group("x")), _bare(m.group("y"))} & (_REPLIES | _NOT_VALUES):
        return Item(Candidate(text=f"{who.subject} prefers {m.group('x')} over {m.group('y')}.",
                              entities=who.entities, tags=["preference"]))
    return None


def sentence_items(sentence: str, who: Speaker) -> list[Item | None]:
    """The items of one sentence of the user (not a question)."""
    body = _strip_greeting(sentence.strip())
    out: list[Item | None] = []
    p = _PRONOUNS.search(body)
    if p and who.name:
        out.append(Item(Candidate(text=f"{who.possessive} pronouns are {p.group('p')}.", entities=who.entities,
                                  tags=["identity"])))
    named = _identity(body, who) if who.name else None
    if named is not None:
        return out + named
    explicit = _explicit(body, who) or _explicit(body := _strip_label(body), who)
    if explicit is not None:
        return [*out, explicit]
    if _EPHEMERAL.search(body) and not clauses(body):
        return out
    return out + [_clause(c, who) for c in clauses(body)]


def _confirmation(text: str, who: Speaker, proposal: str) -> Item | None:
    """A one-word "yes, X" to the assistant's "should I ...?" that names X: the proposal,
    accepted ("The user confirmed: set up the migrations with Alembic.")."""
    m = _CONFIRM.match(text.strip())
    p = _PROPOSAL.search(proposal.strip()) if m else None
    if m is None or p is None:
        return None
    if m.group("v").casefold() not in {_bare(w).casefold() for w in _words(p.group("act"))}:
        return None
    return Item(Candidate(text=_finish(f"{who.subject} confirmed: {p.group('act')}"), tags=["decision"]))


def _joined(items: list[Item | None]) -> list[Candidate]:
    """The candidates of ``items`` (one per clause, None for a clause that gave nothing), each
    ``join`` item appended to the memory of the clause right before it, else dropped."""
    out: list[Candidate] = []
    prev: Item | None = None
    for item in items:
        if item is not None and not item.join:
            out.append(item.candidate)
        elif item is not None and prev is not None and out and out[-1].kind == "memory":
            more = item.candidate.text
            out[-1] = out[-1].model_copy(update={"text": f"{out[-1].text.rstrip('.')}; {more[0].lower()}{more[1:]}"})
            item = None  # one continuation per clause
        prev = item
    return out


class OfflineExtractor:
    """Rule-based extraction from the user's own messages, no model (see the module doc). Each
    result is one sentence of at most ``MAX_TEXT`` characters; the speaker's name comes first."""

    name = "offline"

    def extract(self, window: Window) -> list[Candidate]:
        """The candidates of ``window``'s user messages, in order, each text once."""
        who = speaker(window)
        out: list[Candidate] = []
        if who.name:
            out.append(Candidate(text=f"The user's name is {who.name}.", entities=who.entities, tags=["identity"]))
        proposal = ""
        for role, text in window.lines:
            if role != "user":
                proposal = text
                continue
            confirmed = _confirmation(text, who, proposal)
            items: list[Item | None] = [confirmed] if confirmed else [
                item for s, end in sentences(text) if end != "?" for item in sentence_items(s, who)]
            out += _joined(items)
        seen: set[str] = set()
        kept = []
        for c in out:
            if len(c.text) <= MAX_TEXT and c.text.casefold() not in seen:
                seen.add(c.text.casefold())
                kept.append(c)
        return kept

    def probe(self, timeout_s: float = 3.0) -> tuple[bool, str]:
        return True, "offline extractor: no model endpoint needed"
