"""How clients frame a prompt, and the words that state no task: pure, standard library only.

What a coding agent's client writes around what the user typed (an IDE's open file and
selection, Codex's IDE header, the context hooks inject) and instead of it (Claude Code's
local command output), and the words a user answers the agent with ("3", "yes", "go
on", "お願いします"). :mod:`agentmem.conversation` reads it to tell a task from a reply
when runs are recorded; the prompt hook reads it to tell a prompt that says little
(:func:`says_little`), whose lessons are then chosen with the conversation before it
(:mod:`agentmem.hooks.recent`). The prompt hook imports this module: it imports
nothing but ``re`` and :mod:`agentmem.terms`.
"""

import re

from .terms import query_words

__all__ = [
    "APPROVALS",
    "CLIENT_TEXT",
    "CODEX_CLIENT_TEXT",
    "FILLERS",
    "IDE_CONTEXT",
    "INJECTED",
    "NOTIFICATION_TAGS",
    "OPTION",
    "REPLIES",
    "SHORT_WORDS",
    "Tagged",
    "content_words",
    "says_little",
    "strip_context",
]


class Tagged:
    """Blocks ``<name>...</name>`` of any of ``names``, each opener with the first closer of
    its name after it, and the space after the block: what ``re.sub`` of
    ``<(names)>.*?</\\1>\\s*`` removes, in one pass. That pattern scans to the text's end
    for every opener that is never closed, so a text of unclosed tags (a hostile
    transcript's tail) costs the square of its length; here a name found unclosed once is
    not looked for again."""

    def __init__(self, names: tuple[str, ...], ignore_case: bool = False) -> None:
        flags = re.IGNORECASE if ignore_case else 0
        self._opener = re.compile("<(" + "|".join(re.escape(n) for n in names) + ")>", flags)
        self._ignore_case = ignore_case
        self._closers: dict[str, re.Pattern[str]] = {}

    def _key(self, name: str) -> str:
        """What a backreference to ``name`` matches: under ``ignore_case``, each letter's
        simple lower case, as ``re`` compares them (``ſ`` is not ``s`` there, though
        ``s`` matches ``ſ`` as a pattern's letter)."""
        return "".join(map(_simple_lower, name)) if self._ignore_case else name

    def _closer(self, name: str) -> re.Pattern[str]:
        key = self._key(name)
        if key not in self._closers:
            body = re.escape(name)
            if self._ignore_case:
                body = "".join(_same_letters(c) for c in name)
            self._closers[key] = re.compile(rf"</{body}>\s*")
        return self._closers[key]

    def find_closer(self, text: str, name: str, start: int) -> re.Match[str] | None:
        """The first ``</name>`` (and the space after it) at or after ``start``."""
        return self._closer(name).search(text, start)

    def sub(self, repl: str, text: str) -> str:
        """``text`` with every closed block replaced by ``repl`` (an unclosed opener stays)."""
        out: list[str] = []
        pos = 0
        unclosed: set[str] = set()
        for m in self._opener.finditer(text):
            name = m.group(1)
            key = self._key(name)
            if m.start() < pos or key in unclosed:
                continue
            close = self.find_closer(text, name, m.end())
            if close is None:
                unclosed.add(key)  # no closer after this one: none after a later one
                continue
            out += [text[pos : m.start()], repl]
            pos = close.end()
        out.append(text[pos:])
        return "".join(out)


def _simple_lower(c: str) -> str:
    """A letter's simple lower case (``re``'s, and ``str.lower``'s but for ``İ``)."""
    return "i" if c == "\u0130" else c.lower()


def _same_letters(c: str) -> str:
    """A pattern for the letters whose simple lower case is ``c``'s: what a backreference
    matches under ``re.IGNORECASE`` (``k``: ``k``, ``K``, the Kelvin sign)."""
    low = _simple_lower(c)
    pool = {c, c.lower(), c.upper(), low, low.upper(), "\u212a", "\u0130"}
    same = sorted(x for x in pool if len(x) == 1 and _simple_lower(x) == low)
    return re.escape(same[0]) if len(same) == 1 else "[" + "".join(map(re.escape, same)) + "]"


#: Context a client wraps around what the user typed: removed before anything else is read.
#: Claude Code in an IDE adds the open file and the selection; Codex's IDE extension heads the
#: request with its setup ("# Context from my IDE setup: ... ## My request for Codex:").
IDE_CONTEXT: tuple[Tagged | re.Pattern[str], ...] = (
    Tagged(("ide_opened_file", "ide_selection", "ide_diagnostics")),
    re.compile(
        r"\A\s*# Context from my IDE setup:.*?^## My request for Codex:[ \t]*\n", re.S | re.M
    ),
)
#: Context added to a Claude Code prompt by hooks (agentmem's own lessons among them): not
#: what the user typed.
INJECTED = Tagged(("system-reminder", "user-prompt-submit-hook"), ignore_case=True)
#: User text that Claude Code writes itself: not a prompt.
CLIENT_TEXT = (
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<local-command-caveat>",
    "Caveat: The messages below were generated by the user while running local commands",
    "<bash-input>",
    "<bash-stdout>",
    "<bash-stderr>",
    "<user-memory-input>",
)
#: Text a client writes into the conversation by itself: a notification, not a prompt.
NOTIFICATION_TAGS = (
    "<task-notification>",
    "<system-notification>",
    "<background-task",
    "<agent-notification>",
)
#: A Codex user message that Codex writes itself (the environment, AGENTS.md): not a prompt.
CODEX_CLIENT_TEXT = (
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md",
    "<turn_aborted>",
)

# A choice: options the agent offered (a letter, a number), yes/no, an approval.
OPTION = re.compile(r"\A(?:[a-z]|\d{1,2}|[a-z]\d|\d[a-z])\Z")
APPROVALS = frozenset(
    """
    yes y yeah yep yup sure ok okay k no n nope nah approve approved accept accepted
    agree agreed confirm confirmed proceed go lgtm
    はい いいえ いや うん ええ 了解 承知 お願いします お願い おねがいします 是 否 好 好的 可以 行
    不 不要 对 嗯 确认 同意 네 아니요 예 ja nein oui non si sí да нет
    """.split()
)
#: Words that may stand around an option or approval without stating a task.
FILLERS = frozenset(
    """
    option options choice number no. # the and or & please pls plz thanks thank you
    let's lets go with i'd id i'll ill choose pick take want prefer it is one first
    second third both all of them do that this
    それ これ で を が に します お願い お願いします ください 番 案 と 也 吧 呢 选 请
    """.split()
)
#: A short reply: acknowledgement or "go on", with no task in it.
REPLIES = frozenset(
    """
    thanks thank you thx ty great perfect nice cool good awesome excellent wonderful
    looks sounds good fine right correct exactly done continue keep going go on ahead
    proceed next carry resume retry again try do it that please now more
    ありがとう ありがとうございます 続けて 続き 進めて 次 いいね 完璧 大丈夫 それで
    start begin implement 继续 谢谢 很好 完美 下一步 不错 开始 开始实施 实施 执行 开始吧
    """.split()
)

#: A prompt with fewer content words than this says little (:func:`says_little`).
SHORT_WORDS = 3


def strip_context(text: str) -> str:
    """``text`` without the context a client wrapped around it (an IDE's open file)."""
    for pattern in IDE_CONTEXT:
        text = pattern.sub("", text)
    return text.strip()


def content_words(prompt: str) -> list[str]:
    """The words of ``prompt`` that could say what it is about: its search words
    (:func:`agentmem.terms.query_words`: no stopwords, no bare numbers) once an IDE's
    framing is removed, less option labels and the words that state no task (approvals,
    fillers, replies)."""
    said = query_words(strip_context(prompt))
    no_task = APPROVALS | FILLERS | REPLIES
    return [w for w in said if w not in no_task and not OPTION.match(w)]


def says_little(prompt: str) -> bool:
    """Whether ``prompt`` says too little to choose lessons by itself: fewer than
    :data:`SHORT_WORDS` content words (:func:`content_words`). A task names at least an
    action and what it acts on ("fix the parser", "run the tests"), often with where;
    "3", "both", "commit", "proceed" or an IDE's header and "continue" name what it is
    about only through what came before. A prompt in a script without spaces between
    words (Japanese, Chinese) counts a run of words as one, so a short one says little
    here too: its words are rarely a lesson's."""
    return len(content_words(prompt)) < SHORT_WORDS
