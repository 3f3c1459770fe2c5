"""A multi-hop question's plan: the sub-questions to ask one at a time and how their answers give the answer.

The model writes the plan under a grammar (``prompts/ircot_plan.gbnf``), in the style of MuSiQue's
decompositions: numbered sub-questions, where ``#k`` stands for the answer of sub-question k, then one final
line, either the sub-answer that answers the question or a comparison of two sub-answers computed in code::

    1. Who directed Torchy Blane in Panama?
    2. Where was #1 born?
    Answer: #2

    1. When was Awolnation formed?
    2. When were Foo Fighters formed?
    Compare: earlier #1 #2
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from pipeline.countries import is_people

# What a comparison computes from two values: which is earlier / later (dates), more / less (numbers),
# whether they are the same, whether both are yes.
COMPARISONS = ("earlier", "later", "more", "less", "same", "both")

_STEP = re.compile(r"^\s*(\d+)[.)]\s*(.+?)\s*$")
_ANSWER = re.compile(r"^\s*answer\s*:\s*#(\d+)\s*$", re.IGNORECASE)
_COMPARE = re.compile(r"^\s*compare\s*:\s*(\w+)\s+#(\d+)\s*,?\s*#(\d+)\s*$", re.IGNORECASE)
_REF = re.compile(r"#(\d+)")
# A lower-case "the" is an article ("the chicken or the egg"); a capital one is part of a title ("The Lady").
_OPTIONS = re.compile(r"[,:]\s*(?:(?-i:the)\s+)?(.+?),?\s+or\s+(?:(?-i:the)\s+)?(.+?)\s*\?*\s*$", re.IGNORECASE)


class PlanError(ValueError):
    """The model's plan cannot be followed (the reason says why)."""


@dataclass(frozen=True)
class Plan:
    """Sub-questions in order (``#k`` refers to the answer of sub-question k, 1-based) and the final step:
    ``answer`` names the sub-question whose answer is the answer; ``compare`` is (kind, k1, k2)."""

    questions: tuple[str, ...]
    answer: int | None = None
    compare: tuple[str, int, int] | None = None
    note: str = ""  # how the plan differs from what the model wrote

    def final_line(self) -> str:
        """The plan's last line as the model wrote it (normalised)."""
        if self.compare:
            kind, a, b = self.compare
            return f"Compare: {kind} #{a} #{b}"
        return f"Answer: #{self.answer}"

    def lines(self) -> list[str]:
        """The whole plan, one line per sub-question and the final line."""
        return [f"{i}. {q}" for i, q in enumerate(self.questions, 1)] + [self.final_line()]


def parse_plan(text: str, max_questions: int = 4) -> Plan:
    """The plan in ``text``; ``PlanError`` when it has no sub-question, too many, a final line missing or
    unknown, or a reference to a sub-question that is not answered before it is needed."""
    questions: list[str] = []
    final: Plan | None = None
    for line in text.splitlines():
        if not line.strip():
            continue
        if (match := _ANSWER.match(line)):
            final = Plan((), answer=int(match.group(1)))
            break
        if (match := _COMPARE.match(line)):
            kind = match.group(1).lower()
            if kind not in COMPARISONS:
                raise PlanError(f"unknown comparison '{kind}'")
            final = Plan((), compare=(kind, int(match.group(2)), int(match.group(3))))
            break
        if (match := _STEP.match(line)):
            if int(match.group(1)) != len(questions) + 1:
                raise PlanError(f"sub-question {match.group(1)} is out of order")
            questions.append(match.group(2))
        else:
            raise PlanError(f"unreadable line: {line.strip()[:80]}")
    if not questions:
        raise PlanError("no sub-question")
    if len(questions) > max_questions:
        raise PlanError(f"{len(questions)} sub-questions (at most {max_questions})")
    if final is None:
        raise PlanError("no final 'Answer:' or 'Compare:' line")
    for i, question in enumerate(questions, 1):
        for ref in map(int, _REF.findall(question)):
            if not 1 <= ref < i:
                raise PlanError(f"sub-question {i} uses #{ref} before it is answered")
    refs = [final.answer] if final.answer is not None else list(final.compare[1:])
    for ref in refs:
        if not 1 <= ref <= len(questions):
            raise PlanError(f"the final line uses #{ref}, which is not a sub-question")
    if final.compare and final.compare[1] == final.compare[2]:
        raise PlanError("a comparison of a sub-answer with itself")
    return Plan(tuple(questions), answer=final.answer, compare=final.compare)


def plan_for(text: str, question: str, max_questions: int = 4) -> Plan:
    """The plan in ``text`` for ``question``. A comparison of two choices ("..., A or B?") planned for the
    first choice only (the small model often writes "1. When did A die?" then "Compare: earlier #1 #2") is
    completed: the same sub-questions are asked about the second choice and the last answers compared. One that
    restates the question as a sub-question ("1. Who died first, A or B?") is replaced by the plan its wording
    gives (``comparison_plan``). A name of the question a sub-question cuts short is given whole
    (``whole_names``). ``PlanError`` when it cannot be followed even so."""
    try:
        return whole_names(_completed(text, question, max_questions), question)
    except PlanError:
        fallback = comparison_plan(question)
        if fallback is None:
            raise
        return replace(fallback, note="The model's plan could not be followed; this one comes from the "
                                      "question's wording.")


def _completed(text: str, question: str, max_questions: int) -> Plan:
    try:
        return parse_plan(text, max_questions)
    except PlanError as error:
        lines = [line for line in text.splitlines() if line.strip()]
        choices = options(question)
        compare = _COMPARE.match(lines[-1]) if lines else None
        asked = [m.group(2) for m in map(_STEP.match, lines[:-1]) if m]
        if not (compare and choices and asked and len(asked) == len(lines) - 1 and 2 * len(asked) <= max_questions):
            raise error
        first, second = choices
        text_of = " ".join(asked).casefold()
        if first.casefold() not in text_of or second.casefold() in text_of:
            raise error
        n = len(asked)
        pattern = re.compile(re.escape(first), re.IGNORECASE)
        copies = [_REF.sub(lambda m: f"#{int(m.group(1)) + n}", pattern.sub(second, q)) for q in asked]
        repaired = [f"{i}. {q}" for i, q in enumerate(asked + copies, 1)]
        plan = parse_plan("\n".join(repaired + [f"Compare: {compare.group(1)} #{n} #{2 * n}"]), max_questions)
        return replace(plan, note=f"The model planned for {first} alone; the same is asked of {second}.")


# A comparison's wording, read when the model's plan restates the question: what is compared (a date asked of
# each choice, or of the person each choice names first), and whether the earlier or the later wins.
_WHEN = [(re.compile(r"\b(?:died|dies|die|death)\b", re.I), "When did {} die?"),
         (re.compile(r"\b(?:born|birth|older|younger|oldest|youngest)\b", re.I), "When was {} born?"),
         (re.compile(r"\b(?:released|came out|premiered|aired)\b", re.I), "When was {} released?"),
         (re.compile(r"\bpublished\b", re.I), "When was {} published?"),
         (re.compile(r"\b(?:founded|established|formed|started)\b", re.I), "When was {} founded?")]
_LATER = re.compile(r"\b(?:later|last|more recent(?:ly)?|younger|youngest|newer|most recent(?:ly)?)\b", re.I)
_ROLES = [(re.compile(r"\bdirector\b", re.I), "Who directed {}?"), (re.compile(r"\bauthor\b", re.I), "Who wrote {}?"),
          (re.compile(r"\bcomposer\b", re.I), "Who composed {}?"),
          (re.compile(r"\b(?:performer|singer|artist)\b", re.I), "Who performed {}?"),
          (re.compile(r"\bproducer\b", re.I), "Who produced {}?")]


def comparison_plan(question: str) -> Plan | None:
    """The plan a "which ... first / earlier / later, A or B?" question's own wording gives, or None: the date
    it compares asked of each choice (or of the director, author ... each choice names first), compared."""
    choices = options(question)
    if not choices:
        return None
    stem = question[: question.lower().rfind(choices[0].lower())]
    when = next((template for pattern, template in _WHEN if pattern.search(stem)), None)
    if when is None or not re.search(r"\b(?:first|earlier|earliest|before|older|oldest|later|last|"
                                     r"more recent(?:ly)?|most recent(?:ly)?|younger|youngest|newer)\b", stem, re.I):
        return None
    kind = "later" if _LATER.search(stem) else "earlier"
    role = next((template for pattern, template in _ROLES if pattern.search(stem)), None)
    if role:
        questions = (role.format(choices[0]), role.format(choices[1]), when.format("#1"), when.format("#2"))
        return Plan(questions, compare=(kind, 3, 4))
    return Plan((when.format(choices[0]), when.format(choices[1])), compare=(kind, 1, 2))


# Relatives two steps away, as the two one-step relations they are made of (the first asked of the person the
# question names, the second of its answer). An uncle or a grandparent without "paternal" / "maternal" could be
# reached either way, so it is left to the model's plan.
_KIN = {"paternal grandfather": ("father", "father"), "paternal grandmother": ("father", "mother"),
        "maternal grandfather": ("mother", "father"), "maternal grandmother": ("mother", "mother"),
        "father in law": ("spouse", "father"), "mother in law": ("spouse", "mother"),
        "stepfather": ("mother", "spouse"), "stepmother": ("father", "spouse")}
_KIN_WORDS = "|".join(k.replace(" ", "[- ]") for k in _KIN)
_KIN_OF = re.compile(rf"^\s*who\s+(?:is|was)\s+(?:the\s+)?({_KIN_WORDS})\s+of\s+(.+?)\s*\?*\s*$", re.I)
_KIN_POSSESSIVE = re.compile(rf"^\s*who\s+(?:is|was)\s+(.+?)['’]s?\s+({_KIN_WORDS})\s*\?*\s*$", re.I)


def kin_plan(question: str) -> Plan | None:
    """The plan of "Who is the maternal grandfather of X?" / "Who is X's mother-in-law?" from its wording, or
    None: the two one-step relations, the second asked of the first's answer ("Who is the mother of X?", "Who is
    the father of #1?"). The small model's plans often ask such a question whole, as one sub-question."""
    match = _KIN_OF.match(question)
    if match:
        kin, person = match.group(1), match.group(2)
    elif (match := _KIN_POSSESSIVE.match(question)):
        person, kin = match.group(1), match.group(2)
    else:
        return None
    first, second = _KIN[kin.lower().replace("-", " ")]
    return Plan((f"Who is the {first} of {person.strip()}?", f"Who is the {second} of #1?"), answer=2,
                note=f"A {kin.lower()} is the {second} of the {first}: this plan comes from the question's wording.")


# "Are both X and Y P?" / "Are X and Y both P?": whether each of two things is something, asked of each. A plural
# noun phrase is asked of one thing in the singular ("Are X and Y both American writers?": "Is X an American
# writer?"); "the same ..." is a comparison of two values, not of two yes / no answers, and is left to the model.
_BOTH_FIRST = re.compile(r"^\s*(are|were|is|was|do|does|did|have|has|had|can|could|will|would)\s+both\s+(.+?)\s+and\s+"
                         r"(.+?)\s*\?*\s*$", re.I)
_BOTH_AFTER = re.compile(r"^\s*(are|were|is|was|do|does|did|have|has|had|can|could|will|would)\s+(.+?)\s+and\s+(.+?)"
                         r"\s+both\s+(.+?)\s*\?*\s*$", re.I)
_BOTH_LONGEST = 300  # characters: the wording's split is for a short question, and its patterns backtrack
_SINGULAR_AUX = {"are": "is", "were": "was", "do": "does", "have": "has"}
# Small words inside a name ("Gerald R. Ford", "Leonardo da Vinci", "House of Lords").
_NAME_LINKS = frozenset({"of", "de", "da", "del", "della", "der", "van", "von", "la", "le", "du", "di", "the", "and",
                         "y", "bin", "al"})
# Words that begin a predicate that is not a noun phrase ("located in", "based in", "in Michigan").
_NOT_NOUN = re.compile(r"^(?:\w+ed|in|on|at|from|of|by|for|with|near|part|still|currently|now|alive|dead)$", re.I)


def both_plan(question: str) -> Plan | None:
    """The plan of "Are both X and Y P?" or "Are X and Y both P?" from its wording, or None: "Is X P?", "Is Y P?",
    and whether both are yes, computed (``Compare: both``). The small model's plans ask such a question whole
    (HotpotQA's comparisons)."""
    if len(question) > _BOTH_LONGEST:
        return None
    if (match := _BOTH_AFTER.match(question)):
        aux, first, second, predicate = match.groups()
    elif (match := _BOTH_FIRST.match(question)):
        aux, first, rest = match.groups()
        split = _name_then_predicate(rest)
        if split is None:
            return None
        second, predicate = split
    else:
        return None
    if (re.search(r"\bsame\b", predicate, re.I) or " and " in f" {first} {second} "
            or all(word.lower() in _NAME_LINKS for word in predicate.split())):
        return None
    one_aux = _SINGULAR_AUX.get(aux.lower(), aux.lower())
    if aux.lower() in ("are", "were"):
        predicate = _singular(predicate)
    asked = [f"{one_aux.capitalize()} {thing.strip()} {predicate}?" for thing in (first, second)]
    return Plan(tuple(asked), compare=("both", 1, 2),
                note="Whether both are so is asked of each and computed: this plan comes from the question's wording.")


def _name_then_predicate(text: str) -> tuple[str, str] | None:
    """A name and what is asked of it, in "Gerald R. Ford International Airport located in Michigan": the name runs
    while its words are capitalised (small linking words aside); a people's name just before a lower-case word
    ("James Norman Hall Argentinian authors") begins the predicate."""
    words = text.split()
    end = 0
    while end < len(words) and (words[end][:1].isupper() or words[end][:1].isdigit()
                                or (words[end].lower() in _NAME_LINKS and end + 1 < len(words)
                                    and words[end + 1][:1].isupper())):
        end += 1
    if 1 < end < len(words) and is_people(words[end - 1]):
        end -= 1
    if end == 0 or end == len(words):
        return None
    return " ".join(words[:end]), " ".join(words[end:])


def _singular(predicate: str) -> str:
    """A plural noun phrase said of one thing: "American writers" -> "an American writer", "types of shrub" ->
    "a type of shrub"; any other predicate ("located in Michigan", "alive") is left as it is."""
    words = predicate.split()
    if not words or _NOT_NOUN.match(words[0]) or words[0].lower() in ("a", "an", "the"):
        return predicate
    head = words.index("of") - 1 if "of" in words[1:] else len(words) - 1
    noun = words[head]
    lower = noun.lower()
    if not lower.endswith("s") or lower.endswith("ss") or len(lower) < 4:
        return predicate
    if lower.endswith("ies"):
        noun = noun[:-3] + "y"
    elif re.search(r"(?:s|x|z|ch|sh)es$", lower):
        noun = noun[:-2]
    else:
        noun = noun[:-1]
    words[head] = noun
    article = "an" if words[0][:1].lower() in "aeiou" else "a"
    return " ".join([article, *words])


# A question that reaches its subject through one relative clause ("Who is the brother of the player who has won
# the most ... awards?"): the clause's noun phrase is asked first, then the question with its answer in its place.
# The heads that name a person are asked with "Who".
_PERSON_HEADS = frozenset({
    "actor", "actress", "player", "person", "man", "woman", "singer", "performer", "artist", "author", "writer",
    "director", "composer", "producer", "president", "king", "queen", "leader", "founder", "owner", "member",
    "musician", "one", "individual", "lyricist", "poet", "painter", "architect", "manager", "coach", "star", "wife",
    "husband", "spouse", "father", "mother", "son", "daughter", "brother", "sister", "sibling", "child", "creator",
    "designer", "inventor", "explorer", "ruler", "emperor", "governor"})
_RELATIVE = (r"(?:who|whom|whose|that|which|where|when|in which|on which|at which|from which|to which|for which|"
             r"with which|by which|of which)")
_CLAUSE = re.compile(rf"\bthe\s+((?:[\w-]+\s+){{0,2}}?[\w-]+)\s+({_RELATIVE})\s+(.+?)\s*\?*\s*$", re.I)
_ANOTHER_RELATIVE = re.compile(rf"\b{_RELATIVE}\b", re.I)


def clause_plan(question: str) -> Plan | None:
    """The plan of a question that reaches its subject through one relative clause running to its end, from its
    wording, or None: "Who is the player who has won the most ... awards?", then "Who is the brother of #1?". A
    clause holding another ("the county where the most populous city in the state where ...") is not split, nor
    a choice between two ("Which film has the director who died first, A or B?", ``comparison_plan``'s)."""
    match = _CLAUSE.search(question)
    if not match or options(question):
        return None
    head, relative, clause = match.groups()
    if _ANOTHER_RELATIVE.search(clause) or len(clause.split()) < 2:
        return None
    rest = f"{question[:match.start()]}#1{question[match.end():]}".strip().rstrip("?") + "?"
    if len(rest.split()) < 3:
        return None
    who = "Who" if head.split()[-1].lower() in _PERSON_HEADS else "What"
    return Plan((f"{who} is the {head} {relative} {clause}?", rest), answer=2,
                note="This plan comes from the question's wording: the thing its clause describes is asked first.")


# A question that reaches its subject through a chain of relations written "the R of X" or "X's R" ("the famous
# bridge in the birthplace of Gloria in D Major's composer"): the innermost relation is asked first, its answer
# put in its place, and so on outwards while the phrase left is still a relation of an answer. The relations
# are the nouns that name one thing of another (MuSiQue's single-hop questions ask them so).
_RELATIONS = ("performer|composer|director|author|writer|producer|creator|founder|owner|developer|publisher|"
              "manufacturer|designer|architect|lyricist|singer|father|mother|spouse|wife|husband|son|daughter|"
              "brother|sister|sibling|birthplace|birth place|place of birth|birth city|city of birth|hometown|capital|"
              "record label|country of citizenship|country of origin|headquarters|place of death|employer|"
              "parent company")
_NAME = r"(#\d+|(?-i:[A-Z0-9\"'“])[^?]*?)"  # a name begins with a capital, a digit or a quote; or an answer
_OF_CHAIN = re.compile(rf"the\s+({_RELATIONS})\s+of\s+{_NAME}\s*\?*\s*", re.I)
_POSSESSIVE_CHAIN = re.compile(rf"of\s+{_NAME}['’]s\s+({_RELATIONS})\s*\?*\s*", re.I)
_INNER = re.compile(rf"\b(?:the\s+(?:{_RELATIONS})\s+of|{_RELATIVE})\b|['’]s\s+(?:{_RELATIONS})\b", re.I)
# What is left must still ask something of the answer: "Who is #2?" and "For what did #1?" (its name ran on into
# the verb: "the singer of Moon River in Breakfast at Tiffany's win a Tony") do not.
_ENDS_AUXILIARY = re.compile(r"\b(?:is|was|are|were|do|does|did|has|have|had|can|could|will|would)\s+#\d+\s*\?*\s*$",
                             re.I)
# A name does not end in a verb or a preposition: "the performer of Don't Be Cruel signed to" is no name.
_NOT_NAME_END = re.compile(r"(?-i:\b[a-z]+ed|\b(?:to|in|at|on|for|from|with|by|of|as|born|die|made|found|"
                           r"located|based|built|held|known))\s*$", re.I)


def chain_plan(question: str, max_questions: int = 4) -> Plan | None:
    """The plan of a question that reaches its subject through relations written "the R of X" or "X's R", from its
    wording, or None: "When was the start of the battle of the birthplace of the performer of III?" is asked as
    "Who is the performer of III?", "What is the birthplace of #1?", "When was the start of the battle of #2?".
    The innermost relation (its X a name, holding no other relation or relative clause) is asked first; a single
    relative clause at the end is read as ``clause_plan`` reads it. None when no relation is found, or when what
    is left would only ask for the last answer again ("Who is #2?")."""
    if options(question):
        return None
    steps: list[str] = []
    left = question.strip()
    while len(steps) < max_questions - 1:
        asked, phrase = _innermost(left)
        if asked is None:
            break
        rest = f"{left[:phrase[0]]}#{len(steps) + 1}{left[phrase[1]:]}".strip().rstrip("?") + "?"
        if _ENDS_AUXILIARY.search(rest) or len(_WORD.findall(_REF.sub("", rest))) < 3:
            break
        steps.append(asked)
        left = rest
    if not steps:
        return None
    return Plan((*steps, left), answer=len(steps) + 1,
                note="This plan comes from the question's wording: its relations are asked one at a time, the "
                     "innermost first.")


def _innermost(text: str) -> tuple[str | None, tuple[int, int]]:
    """The sub-question for the innermost relation ending ``text`` and the span of the phrase it replaces, or
    (None, (0, 0)): the last "the R of X" or "of X's R" whose X is a name holding no other relation or clause."""
    for start in reversed([m.start() for m in re.finditer(r"\b(?:the|of)\b", text, re.I)]):
        if (match := _POSSESSIVE_CHAIN.fullmatch(text, start)) and _a_name(match.group(1)):
            relation, name = match.group(2).lower(), match.group(1).strip()
            return f"{_wh(relation)} is the {relation} of {name}?", (match.start(1), len(text))
        if (match := _OF_CHAIN.fullmatch(text, start)) and _a_name(match.group(2)):
            relation, name = match.group(1).lower(), match.group(2).strip()
            return f"{_wh(relation)} is the {relation} of {name}?", (start, len(text))
    after_question_word = (text.split(None, 1) or [""])[-1]  # "Who is the father of ...": "Who" asks, no clause
    if len(_ANOTHER_RELATIVE.findall(after_question_word)) == 1 and (worded := clause_plan(text)) is not None:
        clause = _CLAUSE.search(text)
        return worded.questions[0], (clause.start(), clause.end())
    return None, (0, 0)


_RELATION_NOUNS = rf"(?:{_RELATIONS}|{'|'.join(sorted(_PERSON_HEADS))})"
_ASKS_RELATION = re.compile(rf"\bthe\s+({_RELATION_NOUNS})\s+of\s+(#\d+|[^?]+?)\s*\?*\s*$", re.I)
_NAME_CHARS = 120
_CAPITALISED = re.compile(r"(?-i:[A-Z0-9][\w&.-]*(?:\s+(?:(?:of|the|de|von|van|la|le)\s+)*[A-Z0-9][\w&.-]*)*)")


def reordered_plan(plan: Plan, question: str) -> Plan | None:
    """The plan put in order when the model wrote it outer relation first, or None: it begins with the whole
    question ("Who married the publisher of The North Star?") and a later sub-question asks for the relation
    inside it ("Who was the publisher of #1?"). That sub-question is asked first, of what the question names
    ("Who was the publisher of The North Star?"), then the question with its phrase replaced by the answer ("Who
    married #1?"). The phrase is "the R of X" running to the question's end or "X's R" (X a capitalised name)."""
    for later in plan.questions[1:]:
        asked = _ASKS_RELATION.search(later)
        if asked is None:
            continue
        relation = asked.group(1)
        found = _relation_phrase(question, relation)
        if found is None:
            continue
        name, (start, end) = found
        if not asked.group(2).startswith("#") and asked.group(2).casefold() not in name.casefold():
            continue
        rest = f"{question[:start]}#1{question[end:]}".strip().rstrip("?").strip() + "?"
        if _ENDS_AUXILIARY.search(rest) or len(_WORD.findall(_REF.sub("", rest))) < 2:
            continue
        first = f"{later[:asked.start(2)]}{name}?"
        return Plan((first, rest), answer=2,
                    note=f"The model asked for “the {relation.lower()} of …” after the whole question; it is asked "
                         "first, of what the question names.")
    return None


def _relation_phrase(question: str, relation: str) -> tuple[str, tuple[int, int]] | None:
    """What ``question`` asks the relation of, and the span of the phrase naming it: "the R of X" up to the
    question's end, or "X's R" with X a capitalised name; None when X holds another relation or a clause."""
    text = question.rstrip().rstrip("?").rstrip()
    of = re.search(rf"\bthe\s+{re.escape(relation)}\s+of\s+([^?]+?)$", text, re.I)
    if of is not None:
        name, span = of.group(1).strip(), (of.start(), len(text))
    else:
        possessive = re.search(rf"['’]s\s+{re.escape(relation)}\b", text, re.I)
        if possessive is None:
            return None
        # the name is looked for in the few words before "'s" only: a search over the whole of a long run of
        # capitalised words would take time growing with the square of its length
        before = text[max(0, possessive.start() - _NAME_CHARS):possessive.start()]
        named = re.search(rf"(?:^|\s)({_CAPITALISED.pattern})$", before)
        if named is None:
            return None
        name = named.group(1)
        span = (possessive.start() - len(before) + named.start(1), possessive.end())
    if _INNER.search(name) or re.search(r"['’]s\b", name) or len(name.split()) > 12:
        return None
    return name, span


def _a_name(text: str) -> bool:
    return not _INNER.search(text) and not _NOT_NAME_END.search(text)


def _wh(relation: str) -> str:
    return "Who" if relation.split()[-1] in _PERSON_HEADS else "What"


_WORD = re.compile(r"\w+")


def restates(plan: Plan, question: str, share: float = 0.7) -> bool:
    """Whether the plan's first sub-question asks the whole question again: it holds at least ``share`` of the
    question's words, in a plan that does not compare (a comparison's restated plan is read from the wording,
    ``plan_for``). MuSiQue's nested questions are often planned so ("1. Who is the brother of the player who has
    won the most ... awards?"), and no passage answers them in one step."""
    if plan.compare is not None or not plan.questions:
        return False
    asked = set(_WORD.findall(question.casefold()))
    first = set(_WORD.findall(plan.questions[0].casefold()))
    return bool(asked) and len(asked & first) >= share * len(asked)


def about(plan: Plan, question: str) -> bool:
    """Whether the plan's first sub-question shares a word of four letters or more with the question (question
    words aside): a plan copied from a demonstration ("1. Who wrote The Hobbit?") does not."""
    def content(text: str) -> set[str]:
        return {w for w in _WORD.findall(text.casefold()) if len(w) >= 4} - _QUESTION_WORDS
    return bool(plan.questions) and bool(content(plan.questions[0]) & content(question))


_QUESTION_WORDS = {"what", "when", "where", "which", "whom", "whose", "does", "were", "have", "that", "this",
                   "with", "from", "into"}


def substitute(question: str, answers: dict[int, str]) -> str:
    """``question`` with each ``#k`` replaced by the answer of sub-question k."""
    return _REF.sub(lambda m: answers[int(m.group(1))], question)


def refs_of(question: str) -> list[int]:
    """The sub-questions whose answers ``question`` uses."""
    return [int(ref) for ref in _REF.findall(question)]


def options(question: str) -> list[str]:
    """The two things a "which ..., A or B?" question chooses between, in order, or [] when it names none."""
    match = _OPTIONS.search(question.strip())
    if not match:
        return []
    first, second = (part.strip(" \"'") for part in match.groups())
    # "Which came first, A, B or C" and run-on clauses are not a choice of two.
    return [first, second] if first and second and len(first) < 120 and len(second) < 120 else []


_YES_NO_QUESTION = re.compile(r"^(is|are|was|were|do|does|did|can|could|has|have|had|will|would|should)\b",
                              re.IGNORECASE)


def misfit(question: str, answer: str) -> str | None:
    """Why ``answer`` cannot be the answer to ``question``, or None when it may be: a "which ..., A or B?"
    question is answered by one of its two choices, and only a question that asks yes or no by a yes or a no.
    A chain that ends elsewhere answered another question than the one asked."""
    from pipeline.methods.ircot.compare import yes_no
    from pipeline.text import normalize_answer

    choices = options(question)
    said = normalize_answer(answer)
    if choices and not any(normalize_answer(c) in said or (said and said in normalize_answer(c)) for c in choices):
        return f"\"{answer}\" is neither of the question's choices, {choices[0]} or {choices[1]}."
    if yes_no(answer) is not None and len(answer.split()) == 1 and not _YES_NO_QUESTION.match(question.strip()):
        return f"\"{answer}\" answers yes or no, which the question does not ask."
    return None


def option_of(plan: Plan, ref: int, choices: list[str]) -> str | None:
    """Which of ``choices`` sub-question ``ref`` is about: the choice named in it or in the sub-questions it
    builds on (a bridge comparison asks about the film's director, then about the director)."""
    seen, todo = set(), [ref]
    while todo:
        k = todo.pop()
        if k in seen:
            continue
        seen.add(k)
        text = plan.questions[k - 1].casefold()
        named = [choice for choice in choices if choice.casefold() in text]
        if len(named) == 1:
            return named[0]
        todo.extend(refs_of(plan.questions[k - 1]))
    return None


# A name as questions write it: capitalised words (or numbers), with the small words titles hold between them
# ("Torchy Blane In Panama", "The Great Adventure (1918 Film)"); a possessive or "and" ends it.
_NAME = re.compile(r"[A-Z0-9][\w&.-]*(?:(?:\s+(?:in|of|the|de|del|da|di|von|van|du|la|le|a|an|on|for|to|at))*"
                   r"\s+\(?[A-Z0-9][\w&.-]*\)?)*")


# Longer runs of capitalised words are not a title to restore, and each would cost a search per word.
_MAX_NAME_WORDS = 12


def whole_names(plan: Plan, question: str) -> Plan:
    """``plan`` with each name of ``question`` that a sub-question cut short given whole again: the small model
    plans "Who directed Torchy Blane?" for "the director of film Torchy Blane In Panama", and the search then finds
    another Torchy Blane film. A cut is a run of at least the name's first two words followed neither by its next
    word nor by another capitalised one."""
    names = [m.group(0).split() for m in _NAME.finditer(question)]
    names = [words for words in names if 3 <= len(words) <= _MAX_NAME_WORDS]
    questions, restored = list(plan.questions), []
    for i, text in enumerate(questions):
        for words in names:
            if re.search(_words_pattern(words), text, re.IGNORECASE):
                continue
            for k in range(len(words) - 1, 1, -1):
                # not followed by the name's next word, nor by another capitalised one (John Smith Sr, not Jr)
                cut = re.search(_words_pattern(words[:k]) + r"(?!\s+" + re.escape(words[k]) + r"(?!\w))"
                                r"(?-i:(?!\s+\(?[A-Z0-9]))", text, re.IGNORECASE)
                if cut:
                    text = text[:cut.start()] + " ".join(words) + text[cut.end():]
                    restored.append(" ".join(words))
                    break
        questions[i] = text
    if not restored:
        return plan
    note = f"Names the plan cut short are given whole: {', '.join(dict.fromkeys(restored))}."
    return replace(plan, questions=tuple(questions), note=" ".join(n for n in (plan.note, note) if n))


def _words_pattern(words: list[str]) -> str:
    return r"(?<!\w)" + r"\s+".join(re.escape(w) for w in words) + r"(?!\w)"  # "X's" holds the name X
