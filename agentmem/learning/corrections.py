"""A run's own corrections: a call that failed and the call that then worked after one change.

Most runs an agent records are the only run of their task, so there is no other
run to compare them with; but a run that hit an error and got past it compares
two attempts at the same step itself. :func:`find_corrections` finds those
contrast pairs in one trajectory, and turns each into the same kind of
:class:`~agentmem.learning.findings.Finding`, with the same lesson forms, as a
group's evidence. The lesson must be proven by the data: the same step failed,
then worked after exactly one recognisable change. Pure functions; no database.

The pairs
---------
For each successful call ``j``, the failed call ``i`` it corrects is the last
failed call before it of the same tool that ``j`` retries (the same parameter
names, or the same values: :func:`agentmem.learning.digest.digest`'s rule),
with no successful call of that tool between them. The successful calls made
between ``i`` and ``j`` (leaving out those that returned nothing, a scratchpad
like ``think``) and the parameters of the two calls say what changed:

``prerequisite``
    The same call (same parameters) and exactly one call of another tool U in
    between -> "Before calling T, call U first; without it T fails with e".
    When U had already been called before the failed call and the new call of
    U changed one value, that value was the mistake: a ``param_value`` of U
    ("Call U with X=good, never bad; otherwise the later T call fails").
``param_name``
    Nothing in between, and the parameters differ by one name: a parameter
    renamed (its value kept), added or dropped -> "Call T with right=...,
    never wrong=...".
``param_value``
    Nothing in between, the same names, one value (a string, number or flag:
    not a list or object, where what changed inside is not one thing) changed -> "Call T with X
    like good; never X=bad, which failed with e" (or "look X up with L" when
    an earlier call's output held the good value). Not when the task names both
    values as they were passed: then the second call was for another item the
    task asked for (read a.txt, then b.txt), not a retry.
``recovery``
    Exactly one call U in between whose output holds the one changed value ->
    "If T fails with e, call U and retry with the X it returns".
``wrong_tool``
    A failed call of W that W never made work later (on the same values), followed, with no
    successful call in between, by a successful call of another tool R that
    can stand in for it (a shared name part, parameter names or values), in a
    run the user accepted -> "Use R, not W, for requests like ...". (A
    different tool's success proves the step was done only when the run was
    accepted; the other kinds are proven by the calls themselves.)

Anything else teaches nothing: a plain retry that worked (nothing changed), two
or more changes at once (which of them fixed it?), a failure never fixed.
"""

from __future__ import annotations

import ntpath
import re
from collections.abc import Iterator, Sequence
from typing import Any, Protocol, TypeVar
from urllib.parse import urlsplit

import attrs

from ..agents import ToolKind, is_shell, learning_view, same_job, spec_for
from ..agents import programs as _programs
from ..agents.outcomes import (
    borrowed_params,
    command_line,
    required_missing,
    timed_out,
    unquoted_retries,
    view_indices,
)
from ..agents.shell import parse
from ..domains import step_domain
from ..records import Step, Trajectory
from .bang import bang_text, bangs
from .digest import Recovery, digest, error_phrase, is_retry_of, value_text
from .evidence import (
    Member,
    can_stand_in,
    holds_code,
    is_scalar,
    param_name_finding,
    param_value_finding,
    prerequisite_finding,
    provenance,
    recovery_finding,
    scoped,
    wrong_tool_finding,
)
from .findings import Finding, lesson_text, quote_error, short_value
from .hunk_order import hunk_order_text, hunk_orders, literal_slips, literal_text
from .kept_cwd import KEPT_CWD_ERROR, kept_cwd_text, slips
from .kinds import KINDS as KIND_SPECS
from .kinds import Kind
from .merge import tool_rule_text
from .self_kill import self_kill_text, self_kills
from .shell_fixes import Earlier, find_shell_fixes

__all__ = ["KINDS", "REPEATED_SLIP", "Correction", "find_corrections"]

#: The kinds of change a correction can show (the finding kinds they become).
KINDS = tuple(k for k, spec in KIND_SPECS.items() if spec.correction)


@attrs.frozen
class Correction:
    """One contrast pair inside a run: call ``failed`` failed, call ``fixed`` worked after
    the change ``kind``; ``between`` are the calls that made the change (prerequisite,
    recovery); ``finding`` is the lesson it proves and ``why`` says so in words."""

    kind: str
    failed: int
    fixed: int
    between: tuple[int, ...]
    finding: Finding
    why: str

    def attempts(self, t: Trajectory) -> tuple[Trajectory, Trajectory]:
        """The two attempts at the step, as trajectories: (the one that failed, the one
        that worked). Both share the run's id and the steps before the failed call.
        ``t`` is the run as recorded or as learning sees it (the indices are the latter's)."""
        t = learning_view(t)
        head = list(t.steps[: self.failed])
        bad = attrs.evolve(t, steps=(*head, t.steps[self.failed]), accepted=False)
        good_steps = (*head, *(t.steps[b] for b in self.between), t.steps[self.fixed])
        good = attrs.evolve(t, steps=good_steps, accepted=True)
        return bad, good


def _inert(s: Step) -> bool:
    return s.success and not s.output.strip()


#: The kinds of a coding agent's tools that look and change nothing (a read, a search, a
#: plan's bookkeeping, a web page).
_LOOKS = frozenset({ToolKind.READ, ToolKind.SEARCH, ToolKind.PLAN, ToolKind.WEB})


def _observes(s: Step) -> bool:
    """A call of a client's tool that only looks (:data:`_LOOKS`): it cannot be what made a
    retry work."""
    found = spec_for(s.tool)
    return found is not None and found[1].kind in _LOOKS


def _error(s: Step) -> str:
    return error_phrase(s.output)


def _domain(s: Step) -> str:
    return s.domain or ""


def _one_name_change(p: dict[str, Any], q: dict[str, Any]) -> bool:
    """``q`` is ``p`` with one parameter renamed (value kept), added or dropped."""
    extra, missing = set(p) - set(q), set(q) - set(p)
    same = set(p) & set(q)
    if any(p[k] != q[k] for k in same):
        return False
    if len(extra) == 1 and len(missing) == 1:
        return p[next(iter(extra))] == q[next(iter(missing))]
    return len(extra) + len(missing) == 1


def _changed_values(p: dict[str, Any], q: dict[str, Any]) -> list[str]:
    return [k for k in q if p.get(k) != q[k]]


def _in_output(value: Any, s: Step) -> bool:
    text = value_text(value, 200)
    return len(text) >= 2 and text in s.output


def _asked(task: str, value: Any) -> bool:
    """Whether the task text names ``value`` as it was passed (text of 2+ characters)."""
    return isinstance(value, str) and len(value.strip()) >= 2 and value in task


def _step_word(i: int) -> str:
    return f"call {i + 1}"


def _same_values(a: Step, b: Step) -> bool:
    return sorted(map(repr, a.params.values())) == sorted(map(repr, b.params.values()))


def _retry_pair(t: Trajectory, j: int) -> int | None:
    """The failed call that successful call ``j`` retries, if any (see the module doc)."""
    s = t.steps[j]
    for i in range(j - 1, -1, -1):
        p = t.steps[i]
        if p.tool != s.tool:
            continue
        if p.success:
            return None  # a successful call of the tool in between: j is another call
        if is_retry_of(p, s):
            return i
    return None


def _same_step(t: Trajectory, i: int, j: int) -> Correction | None:
    """The correction between failed call ``i`` and its successful retry ``j``."""
    w, r = t.steps[i], t.steps[j]
    e = _error(w)
    q = quote_error(e, 8)
    between = [b for b in range(i + 1, j) if t.steps[b].success and not _inert(t.steps[b])]
    head = f"{_step_word(i)} {w.tool} failed ('{q}')"
    dom = _domain(w) or _domain(r)
    if timed_out(w):
        return None  # the tool ran out of time: neither a change nor a step is shown a fix
    if w.params == r.params:
        return _same_call(t, i, j, between, e, head, dom)
    if set(w.params) != set(r.params):
        return _renamed(t, i, j, between, e, head, dom)
    return _changed_value(t, i, j, between, e, head, dom)


def _same_call(
    t: Trajectory, i: int, j: int, between: list[int], e: str, head: str, dom: str
) -> Correction | None:
    """The same call worked after one call of another tool U: a prerequisite (or, when U
    had been called before with one value changed since, a wrong value of U)."""
    w = t.steps[i]
    if len(between) != 1 or t.steps[between[0]].tool == w.tool:
        return None  # a plain retry, or several calls between: no single change
    u = t.steps[between[0]]
    earlier = next(
        (t.steps[k] for k in range(i - 1, -1, -1) if t.steps[k].tool == u.tool),
        None,
    )
    if earlier is not None and earlier.success and earlier.params != u.params:
        return _setting(t, i, j, between[0], earlier, e, head)
    return Correction(
        "prerequisite",
        i,
        j,
        tuple(between),
        prerequisite_finding(w.tool, u.tool, dom, e),
        f"{head}; {u.tool} was called ({_step_word(between[0])}); the same {w.tool} call "
        f"then worked ({_step_word(j)})",
    )


def _renamed(
    t: Trajectory, i: int, j: int, between: list[int], e: str, head: str, dom: str
) -> Correction | None:
    """The retry renamed, added or dropped one parameter, nothing in between: its name.

    A coding agent's tool retried with one option more may have looked only in between
    (:func:`_observes`: a Glob issued beside the failed Read, in the same message, before
    its error was read): a look changes nothing the retry needs."""
    w, r = t.steps[i], t.steps[j]
    if not _one_name_change(dict(w.params), dict(r.params)):
        return None
    added = sorted(set(r.params) - set(w.params))
    if spec_for(w.tool) is not None and added and set(w.params) <= set(r.params):
        # a coding agent's tool retried with one option more (Read with a limit): a way out
        # of that error, not a parameter every call needs
        if any(not _observes(t.steps[b]) for b in between):
            return None
        x = added[0]
        text = lesson_text(f"If {w.tool} fails with '{quote_error(e, 6)}', retry it with {x} set.")
        way_out = Finding(
            Kind.RECOVERY,
            w.tool,
            dom,
            text,
            (w.tool, x),
            detail={"error": e, "helper": None, "param": x, "scope": "tool"},
        )
        return Correction(
            Kind.RECOVERY,
            i,
            j,
            (),
            way_out,
            f"{head}; retried with {x} added ({_step_word(j)}): it worked",
        )
    if between:
        return None
    f = param_name_finding(w.tool, dom, e, dict(w.params), dict(r.params))
    if f is None:
        return None
    wrong = sorted(set(w.params) - set(r.params))
    right = sorted(set(r.params) - set(w.params))
    change = (
        f"{', '.join(right)} instead of {', '.join(wrong)}"
        if wrong and right
        else f"{', '.join(right)} added"
        if right
        else f"{', '.join(wrong)} dropped"
    )
    return Correction(
        "param_name",
        i,
        j,
        (),
        f,
        f"{head}; retried with {change} ({_step_word(j)}): it worked",
    )


def _changed_value(
    t: Trajectory, i: int, j: int, between: list[int], e: str, head: str, dom: str
) -> Correction | None:
    """The retry changed one scalar value: a wrong value (nothing in between) or a
    recovery (one call in between returned the new value)."""
    w, r = t.steps[i], t.steps[j]
    changed = _changed_values(dict(w.params), dict(r.params))
    if len(changed) != 1:
        return None  # several values changed at once
    x = changed[0]
    bad, good = w.params[x], r.params[x]
    if not (is_scalar(bad) and is_scalar(good)):
        return None  # a list or object changed: which part of it was the fix?
    if holds_code(w.tool, x, bad) or holds_code(w.tool, x, good):
        return None  # a shell line or a script changed: code, as the shell kinds read it
    if short_value(bad) == short_value(good):
        return None  # the two values read the same once clipped: a lesson could not tell them apart
    found = spec_for(w.tool)
    if found is not None and (x == found[1].path or any(k in w.output for k, _ in found[1].needs)):
        return None  # a coding agent's tool on another file, or refused by its own rule: no value
    if found is not None and found[1].kind in (ToolKind.WRITE, ToolKind.EDIT, ToolKind.PATCH):
        return None  # a file's content changed: no value a lesson can name
    change = f"{x}={value_text(good, 30)} instead of {value_text(bad, 30)}"
    if not between:
        if _asked(t.task, bad) and _asked(t.task, good):
            return None  # the task named both: a call for another item, not a retry
        run = Member(t, digest(t, 0.0, 0.0))
        source = provenance(run, i, good)
        src = source if source != w.tool else None
        # the retry is the tool with another value that worked: the value was wrong
        f = param_value_finding(w.tool, dom, e, x, bad, good, src, right_value_shown=True)
        return Correction(
            "param_value",
            i,
            j,
            (),
            f,
            f"{head}; retried with {change} ({_step_word(j)}): it worked",
        )
    if len(between) != 1 or not _in_output(good, t.steps[between[0]]):
        return None  # a call in between and a value from elsewhere: two changes
    u = t.steps[between[0]]
    if u.tool == w.tool:
        return None
    rec = Recovery(
        tool=w.tool,
        error=e,
        failed_params=dict(w.params),
        fixed_params=dict(r.params),
        between=(u.tool,),
    )
    return Correction(
        "recovery",
        i,
        j,
        tuple(between),
        recovery_finding(rec, dom),
        f"{head}; {u.tool} returned {value_text(good, 30)} ({_step_word(between[0])}); "
        f"retried with {change} ({_step_word(j)}): it worked",
    )


def _setting(
    t: Trajectory, i: int, j: int, b: int, earlier: Step, e: str, head: str
) -> Correction | None:
    """Helper U had been called before the failed call ``i``; calling it again with one
    value changed made the same call work: that value of U was wrong."""
    u, w = t.steps[b], t.steps[i]
    if set(earlier.params) != set(u.params):
        return None
    changed = _changed_values(dict(earlier.params), dict(u.params))
    if len(changed) != 1:
        return None
    x = changed[0]
    bad, good = earlier.params[x], u.params[x]
    f = param_value_finding(
        u.tool, _domain(u), None, x, bad, good, None, w.tool, e, right_value_shown=True
    )
    return Correction(
        "param_value",
        i,
        j,
        (b,),
        f,
        f"{head}; {u.tool} was called again with {x}={value_text(good, 30)} instead of "
        f"{value_text(bad, 30)} ({_step_word(b)}); the same {w.tool} call then worked "
        f"({_step_word(j)})",
    )


#: A URL, or a search pattern (``*``, ``?``, ``|``, ``^``), where a file's path goes.
_NO_PATH = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://|[*?|^]")


def malformed_target(s: Step) -> bool:
    """Whether a call's path parameter held no path: a URL given to Read, a glob or a
    regular expression given as a file. The call failed on its argument; another tool that
    then took the same value (a fetch of the URL, a search for the pattern) shows no rule
    of "use B instead of A", only that the argument was not a path. The path parameter is
    the client table's (:attr:`ToolSpec.path`), or for a tool no table knows any parameter
    whose name says path or file; a web tool's URL is its own."""
    found = spec_for(s.tool)
    if found is not None and found[1].kind is ToolKind.WEB:
        return False
    if found is not None and found[1].path:
        keys = [found[1].path]
    else:
        keys = [k for k in s.params if re.search(r"(?i)path|file|dir", k)]
    return any(isinstance(s.params.get(k), str) and _NO_PATH.search(s.params[k]) for k in keys)


def _same_target(w: Step, s: Step) -> bool:
    """Whether ``s`` is a call of ``w``'s tool on the same file, folder or URL: the
    client table's path parameter, or for a tool no table knows every parameter whose name
    says path, file, dir or url (at least one), each with the same value."""
    if s.tool != w.tool:
        return False
    found = spec_for(w.tool)
    if found is not None and found[1].path:
        keys = [found[1].path]
    else:
        keys = [k for k in w.params if re.search(r"(?i)path|file|dir|url", k)]
    return bool(keys) and all(k in s.params and s.params[k] == w.params.get(k) for k in keys)


#: A client's answer that it has no tool of the name called (Claude Code's "No such tool
#: available: X", an MCP host's "Unknown tool").
_NO_SUCH_TOOL = re.compile(r"(?i)no such tool available|unknown tool\b|tool \S+ not found")


def _same_name(a: str, b: str) -> bool:
    """Whether two tool names name one tool: the same letters in any case, or one an MCP
    server's name for the other (``mcp__web__webReader`` and ``WebReader``)."""
    x, y = a.lower(), b.lower()
    return x == y or x.rsplit("__", 1)[-1] == y.rsplit("__", 1)[-1]


#: A file tool's own check of the file its call would make, which refused it (Claude
#: Code's "settings.json validation failed after edit: Invalid JSON ..."): the content
#: was wrong, not the tool.
_CONTENT_REFUSED = re.compile(
    r"(?i)validation failed after (?:edit|write)|\binvalid json\b|\bjson parse error\b"
)
_FILE_TOOLS = (ToolKind.EDIT, ToolKind.WRITE, ToolKind.PATCH)


def _content_refused(w: Step) -> bool:
    """Whether file-writing call ``w`` failed because the file it would make was refused
    (blind set 13, read after its first try: an Edit that would leave a settings file
    invalid JSON, then a Write of the whole file, valid, taught "use Write, not Edit").
    Another tool that then wrote other content shows no rule of tools."""
    found = spec_for(w.tool)
    return (
        found is not None
        and found[1].kind in _FILE_TOOLS
        and bool(_CONTENT_REFUSED.search(w.output[:2000]))
    )


#: The failed call's own target is not there ("Path does not exist", "File does not
#: exist", ENOENT): the path was wrong, not the tool.
_TARGET_MISSING = re.compile(
    r"(?i)\b(?:path|file|directory|folder)\b[^\n]{0,60}?(?:does not exist|not found)"
    r"|no such file or directory|\bENOENT\b"
)


#: A search's answer that it found nothing (Claude Code's Glob and Grep), or no answer.
_FOUND_NOTHING = re.compile(r"(?i)\s*(?:no files found|no matches found|found 0 \w+)?\s*")


def _shares_a_value(w: Step, r: Step) -> bool:
    """Whether call ``r`` took one of ``w``'s string values (a URL, a path) whole."""
    said = {v for v in w.params.values() if isinstance(v, str) and len(v) > 3}
    return any(isinstance(v, str) and v in said for v in r.params.values())


def _other_tool(t: Trajectory, i: int, used: set[int]) -> Correction | None:
    """A different tool that did the step of failed call ``i`` (see the module doc); none
    after a malformed argument (:func:`malformed_target`)."""
    w = t.steps[i]
    if t.accepted is not True or malformed_target(w) or _content_refused(w):
        return None
    later_ok = [k for k in range(i + 1, len(t.steps)) if t.steps[k].success]
    if any(t.steps[k].tool == w.tool and _same_values(w, t.steps[k]) for k in later_ok):
        return None  # the tool itself worked on the same values later: not a substitution
    if any(_same_target(w, t.steps[k]) for k in later_ok):
        # the tool itself then worked on the same file: what ran in between was a step that
        # must come first (a folder made before the write into it), never a tool to use
        # instead; with the content changed too, which of the two was the fix is not shown
        return None
    nxt = next((k for k in later_ok if not _inert(t.steps[k])), None)
    if nxt is None or nxt in used:
        return None
    r = t.steps[nxt]
    if r.tool == w.tool or not can_stand_in((), r, w):
        return None
    e = _error(w)
    if _TARGET_MISSING.search(e or "") and (
        not _shares_a_value(w, r) or _FOUND_NOTHING.fullmatch(r.output[:200])
    ):
        # a search or read of a path that is not there, then another tool on other values
        # (Grep of a missing folder, then Glob of a pattern: blind set 14's first try):
        # the agent looked elsewhere; Write of the very file an Edit missed still teaches;
        # a Glob of the very folder that was not there found nothing: no step done
        return None
    if (
        not is_shell(w.tool)
        and _NO_SUCH_TOOL.search(e or "")
        and not (_same_name(w.tool, r.tool) or _shares_a_value(w, r))
    ):
        # the client has no tool of that name: the fix is its right name, or a tool that
        # took the same value (WebFetch of the URL); one that ran on other values next
        # (WebSearch of a query after no "WebReader") did another job: no rule
        return None
    prev = next((t.steps[k].tool for k in range(i - 1, -1, -1) if t.steps[k].success), None)
    f = wrong_tool_finding(r, w, _domain(w) or _domain(r), e, prev, t.task)
    return Correction(
        "wrong_tool",
        i,
        nxt,
        (),
        f,
        f"{_step_word(i)} {w.tool} failed ('{quote_error(e, 8)}'); {r.tool} did the step "
        f"({_step_word(nxt)}) and the run was accepted",
    )


def find_corrections(t: Trajectory, earlier: Earlier | None = None) -> list[Correction]:
    """The run's corrections, in the order of their failed calls (see the module doc).
    ``earlier``: the files its session's earlier runs used (:func:`.shell_fixes.paths_used`).

    The run is read as learning sees it (:func:`agentmem.agents.learning_view`: calls that
    never ran left out, failures that are no misuse counted as done, parameters that
    change nothing dropped). A shell tool's calls are compared as commands
    (:mod:`.shell_fixes`), never by the generic rules, and a generic lesson never names
    a shell tool.
    """
    recorded = t
    t = learning_view(t)
    needs = _tool_needs(t) + _tool_refusals(recorded) + _unquoted(t) + _cwd_kept(t, recorded)
    needs += _self_kill(t, recorded) + _bang(t, recorded) + _hunk_order(t, recorded)
    needs += _borrowed(t, recorded) + _literal_patch(t, recorded)
    shell = find_shell_fixes(t, earlier)
    # a client tool's path found elsewhere (shell_fixes' location rule) is where the
    # project keeps the file, not a value of the tool's parameter
    taken = {c.failed for c in needs} | {x.failed for x in shell}
    out = [
        c for c in _generic_corrections(t) if not _names_shell(c.finding) and c.failed not in taken
    ]
    out += needs
    out += _tool_instead(t, {c.failed for c in out})
    out += [
        Correction(Kind.SHELL, x.failed, x.fixed, x.between, x.finding, x.why)
        # a risky correction (an escalation past the sandbox) is learned like any other:
        # its lesson names the escalation, so it is written held for a person (issue 30,
        # agents/risk.py) and never served until one approves it
        for x in shell
    ]
    return sorted((_scoped(c) for c in out), key=lambda c: c.failed)


def _file_of(s: Step) -> str | None:
    found = spec_for(s.tool)
    key = found[1].path if found else None
    value = s.params.get(key) if key else None
    return value if isinstance(value, str) and value else None


def _already_did(w: Step, how: str) -> bool:
    """Whether failed call ``w`` already passed a parameter that the rule's way out
    names ("pass offset and limit": a Read with ``limit`` that still failed): the way out
    did not lift that failure, so it is no slip of the rule (nor support for it)."""
    return any(_names(how, p) for p in w.params)


def _names(how: str, param: str) -> bool:
    """Whether a way out (``how``) names parameter ``param`` as a word."""
    return re.search(rf"\b{re.escape(param)}\b", how) is not None


def _passed_for(tool: str, rule: str, how: str, w: Step) -> list[str]:
    """The parameters of ``w`` that an earlier way out of the same error names (``limit``,
    for the way after "pass offset and limit"): that way is for calls that passed them,
    and only their slips count for it (``detail["passed"]``)."""
    found = spec_for(tool)
    before: list[str] = []
    for k, h in found[1].instead if found else ():
        if h == how:
            break
        if k == rule:
            before.append(h)
    return sorted(p for p in w.params if any(_names(h, p) for h in before))


def _tool_instead(t: Trajectory, corrected: set[int]) -> list[Correction]:
    """A coding agent's tool refused what it was given by one of its own rules
    (:attr:`agentmem.agents.ToolSpec.instead`: Read on a folder, "EISDIR"; a file too
    large to read whole): the tool's rule, stated by the client table, not the output.

    Its error explains itself, so a one-off slip teaches nothing: the finding counts the
    run's slips of that rule (``detail["slips"]``) and is a lesson only once the slip
    repeats, in this run or, merged in Stage 3, in the session's other runs
    (``detail["repeats"]``: :func:`agentmem.learning.stages.repeated`). A failed call that
    the run corrected otherwise (``corrected``: a retry with ``limit``) is left to that
    correction."""
    out: list[Correction] = []
    steps = t.steps
    hits: dict[tuple[str, str, str], list[int]] = {}
    for i, w in enumerate(steps):
        found = spec_for(w.tool)
        if w.success or found is None or _file_of(w) is None or i in corrected:
            continue
        # the first way out of the error that the call had not taken already (a Read that
        # passed limit and still failed: not "pass offset and limit", the next way)
        rule, how = next(
            ((k, h) for k, h in found[1].instead if k in w.output and not _already_did(w, h)),
            (None, ""),
        )
        if rule is not None:
            hits.setdefault((w.tool, rule, how), []).append(i)
    for (tool, rule, how), idx in hits.items():
        i = idx[0]
        w = steps[i]
        e = _error(w)
        text = lesson_text(f"If {tool} fails with '{rule}', {how}.")
        more: dict[str, Any] = {"how": how, "slips": len(idx), "repeats": True}
        passed = _passed_for(tool, rule, how, w)
        if passed:
            more["passed"] = passed
        f = _tool_rule(w, text, (tool,), e, rule, declared=True, **more)
        why = f"{_step_word(i)} {tool} failed ('{quote_error(e, 8)}'), {len(idx)} such slip(s)"
        out.append(Correction(Kind.TOOL_RULE, i, i, tuple(idx[1:]), f, why))
    return out


#: A host that names this machine or its local network: WebFetch refuses it ("Invalid URL").
_LOCAL_HOST = re.compile(
    r"^(localhost|127(\.\d{1,3}){3}|0\.0\.0\.0|::1|[\w.-]+\.(local|localhost))$", re.I
)
#: A key a validator refused, as its error names it ("Unrecognized field: hasCompletedOnboarding").
_FIELD = re.compile(
    r"(?:Unrecognized|Unknown|Unexpected) (?:field|key|property)s?:?\s*['\"`]?"
    r"([A-Za-z_$][\w$.-]{1,60})"
)
#: How many calls after a refusal the way that worked may come.
_REFUSAL_WINDOW = 12


def _target(s: Step) -> str | None:
    """The path or URL a client tool's call is about (:attr:`ToolSpec.path`)."""
    return _file_of(s)


def _refused_what(cls: str, target: str) -> str | None:
    """What the tool refused, as a lesson names it: a class of target, never one value
    (None when the target is of no class a lesson may name: a remote URL)."""
    if cls == "binary":
        ext = ntpath.splitext(target)[1].lower()
        return f"a binary {ext} file" if re.fullmatch(r"\.[a-z0-9]{1,6}", ext) else None
    if cls == "local":
        try:
            host = urlsplit(target).hostname or ""
        except ValueError:
            return None
        return f"a local address such as {target}" if _LOCAL_HOST.match(host) else None
    return None


def _names_target(word: str, target: str) -> bool:
    if target in word:
        return True
    name = ntpath.basename(target.rstrip("/\\"))
    return "." in name and len(name) >= 5 and name in word


def _own_success(script_pipelines: Sequence[Any], k: int) -> bool:
    """Whether pipeline ``k``'s success is proven by the call's: every pipeline after it
    joined by ``&&`` (after ``a || b`` or ``a; b`` the success may be another's)."""
    return all(p.connector == "&&" for p in script_pipelines[k + 1 :])


def _looks_only(program: str) -> bool:
    """A program that is no way to what a tool refused: one that only looks at a file or
    handles it as a file (``ls``, ``stat``, ``file``, ``cat``, ``cp``, ``mv``, ``rm``,
    ``unzip``: a probe, a lister, a mover or any program of the file system), sets the
    scene (``echo``) or changes a file's content (``patch``)."""
    p = _programs.get(program)
    if p is None:
        return False
    no_way = {
        _programs.Role.PROBE,
        _programs.Role.LISTS,
        _programs.Role.MOVES,
        _programs.Role.EDITS,
        _programs.Role.SCENE,
    }
    return bool(p.roles & no_way) or p.domain == "fs"


def _other_way(t: Trajectory, i: int, target: str) -> tuple[int, str, str] | None:
    """(index, the program or tool, the shell tool or "") of the first later successful
    call that reached ``target`` another way than refused call ``i``'s tool; None when
    that tool itself later took the same target (the refusal did not hold) or no call did.
    A look at the target (:func:`_looks_only`) is no way to it."""
    w = t.steps[i]
    for k in range(i + 1, min(len(t.steps), i + 1 + _REFUSAL_WINDOW)):
        s = t.steps[k]
        if not s.success:
            continue
        if s.tool == w.tool:
            if _target(s) == target:
                return None
            continue
        found = spec_for(s.tool)
        if found is not None and found[1].command is not None:
            if not s.output.strip():
                continue  # nothing came back: no proof it reached the target
            script = parse(command_line(found[1], s.params))
            if not script.parsed:
                continue
            for n, pl in enumerate(script.pipelines):
                for c in pl.commands:
                    if not any(_names_target(x, target) for x in c.args):
                        continue
                    if _looks_only(c.program):
                        continue
                    if _own_success(script.pipelines, n):
                        return k, c.program, s.tool
            continue
        if found is not None and found[1].kind in (ToolKind.PLAN, ToolKind.SEARCH):
            continue
        if any(isinstance(v, str) and v == target for v in s.params.values()):
            return k, s.tool, ""
    return None


def _content(s: Step, path_key: str | None) -> str:
    return "\n".join(
        v if isinstance(v, str) else repr(v) for k, v in s.params.items() if k != path_key
    )


def _dropped_field(t: Trajectory, i: int, path: str, name: str) -> int | None:
    """The later call of the same job on ``path`` (an Edit after an Edit or a Write) that
    worked without the key ``name`` that refused call ``i`` held, and kept the rest of what
    call ``i`` meant to write (:func:`_kept_intent`)."""
    w = t.steps[i]
    found = spec_for(w.tool)
    key = found[1].path if found else None
    if name not in _content(w, key):
        return None  # the refused key was not the call's: it was in the file already
    for k in range(i + 1, min(len(t.steps), i + 7)):
        s = t.steps[k]
        if _file_of(s) != path or not same_job(s.tool, w.tool):
            continue
        if not s.success:
            return None
        other = spec_for(s.tool)
        done = _content(s, other[1].path if other else None)
        wrote = str(s.params.get("new_string") or s.params.get("content") or done)
        return k if name not in done and _kept_intent(w, key, wrote, name) else None
    return None


_WORD = re.compile(r"[A-Za-z_][\w.-]{2,}")
_LITERALS = frozenset({"true", "false", "null", "none", "True", "False", "None"})


def _kept_intent(w: Step, key: str | None, done: str, name: str) -> bool:
    """Whether a later write (its content ``done``) still did what refused call ``w`` set
    out to do, less the key ``name``: a word ``w`` added (beyond its ``old_string``), other
    than the key and bare literals, is in it. A later edit of the same file that only does
    something else (the goal given up) is no correction."""
    added = set(_WORD.findall(_content(w, key))) - set(
        _WORD.findall(str(w.params.get("old_string") or ""))
    )
    added -= {name, *_LITERALS}
    return bool(added & set(_WORD.findall(done)))


def _tool_refusals(t: Trajectory) -> list[Correction]:
    """A client tool refused its target by one of its own rules whose error does not say
    what works (:attr:`agentmem.agents.ToolSpec.refuses`: Read of a binary file, WebFetch of
    a local address, Claude Code's own settings check), and the run then reached that
    target another way: the lesson says what the tool refuses and what worked. One run
    shows it (the error named no way out); a refusal of one value that no class names (a
    remote URL "Invalid"), or one the run never got past, teaches nothing.

    ``t`` is the run as recorded: the way that worked must have worked (an inline script
    that failed counts as done in :func:`learning_view`); the corrections' indices are the
    view's (:func:`agentmem.agents.outcomes.view_indices`)."""
    out: list[Correction] = []
    at = view_indices(t)
    view = learning_view(t)
    for i, w in enumerate(t.steps):
        found = spec_for(w.tool)
        target = _target(w)
        seen = at[i]
        if w.success or found is None or target is None or seen is None:
            continue
        rule = next(((x, c) for x, c in found[1].refuses if x in w.output), None)
        if rule is None:
            continue
        words, cls = rule
        e = _error(view.steps[seen])
        if cls == "field":
            m = _FIELD.search(w.output)
            name = m.group(1).rstrip(".-") if m else ""
            k = _dropped_field(t, i, target, name) if m else None
            if m is None or k is None:
                continue
            file = ntpath.basename(target)
            said = f"{words} ... {m.group(0).rstrip('.-')}"
            quote = quote_error(said, 10)
            # the file and the key stand in the quoted error: the client's own words
            text = lesson_text(
                f"{w.tool} is refused when the file gets a key its schema does not know "
                f"('{quote}'): leave that key out of the file."
            )
            facts: tuple[str, ...] = (w.tool, file, name)
            how = f"the same {file} without {name}"
        else:
            what = _refused_what(cls, target)
            way = _other_way(t, i, target) if what else None
            if what is None or way is None:
                continue
            k, program, shell = way
            quote = quote_error(e.split(". ")[0], 6)
            by = f"{program} in {shell}" if shell else program
            text = lesson_text(f"{w.tool} refuses {what} ('{quote}'): {by} did it instead.")
            facts = (w.tool, program)
            how = by
        f = _tool_rule(w, text, facts, e, words, refused=cls, how=how)
        a, b = at[i], at[k]
        if a is None or b is None:
            continue
        why = (
            f"{_step_word(a)} {w.tool} refused its target ('{quote_error(e, 8)}'); "
            f"{how} worked ({_step_word(b)})"
        )
        out.append(Correction(Kind.TOOL_RULE, a, b, (), f, why))
    return out


_S = TypeVar("_S", bound="_Slip")


class _Slip(Protocol):
    """A slip read from the recorded run: its failed call and the call that fixed it."""

    @property
    def failed(self) -> int: ...

    @property
    def fixed(self) -> int: ...


def _in_view(recorded: Trajectory, found: Sequence[_S]) -> Iterator[tuple[int, int, _S]]:
    """Each slip found in the recorded run with its failed and fixed calls' indices in the
    learning view (:func:`agentmem.agents.learning_view`); a slip whose call the view drops
    is left out."""
    at = view_indices(recorded)
    for x in found:
        a, b = at[x.failed], at[x.fixed]
        if a is not None and b is not None:
            yield a, b, x


def _cwd_kept(t: Trajectory, recorded: Trajectory) -> list[Correction]:
    """A shell tool that keeps its working directory between calls (Claude Code's Bash:
    :attr:`agentmem.agents.ToolSpec.keeps_cwd`) stood in a subfolder after a ``cd``, and a
    call failed for it: ``cd D`` again, or a path written from the project's top, in the
    shell or in a client tool (:mod:`.kept_cwd`). The lesson is the client's, one text for
    every such slip so that Stage 3 merges them: its shell keeps the folder. It is never a
    fact of where the project keeps D (a working directory's slip: ``shell_fixes.cwd_slip``).

    The recorded run is read (a build's "lstat ./services/api/: no such file" is a failing
    check of the code to the learning view, which counts it done); the correction's
    indices and its failed call's error are the view's (``t``: the client's framing gone)."""
    out: list[Correction] = []
    for a, b, x in _in_view(recorded, slips(recorded)):
        w = t.steps[a]
        e = _error(w)
        text = kept_cwd_text(x.shell)
        how = "the same command without the cd" if x.face == "again" else "an absolute path"
        # declared: the client table states it (ToolSpec.keeps_cwd), as the search tools'
        # own error does; its text names the client's tools, no value of one task
        f = _tool_rule(
            w,
            text,
            (x.shell, "cd"),
            e,
            KEPT_CWD_ERROR,
            refused="cwd",
            how=how,
            folder=x.folder,
            declared=True,
        )
        # one lesson of the shell, whatever failed: the shell's tool and its cd's domain,
        # so that Stage 3 merges the slips of a Grep path and of a build (one domain each)
        f = attrs.evolve(f, tool=x.shell, domain=step_domain(x.shell, {"command": "cd"}))
        why = x.why.replace("{q}", quote_error(e, 8))
        out.append(Correction(Kind.TOOL_RULE, a, b, (), f, why))
    return out


def _bang(t: Trajectory, recorded: Trajectory) -> list[Correction]:
    """A shell call whose ``!`` the tool escaped as ``\\!`` (the output echoes it), and a
    later call that ran the same program without one (:mod:`.bang`). The lesson is the
    shell tool's; the run proves it (the echo shows the backslash the tool added), so no
    other run's way refutes it."""
    out: list[Correction] = []
    for a, b, x in _in_view(recorded, bangs(recorded)):
        w = t.steps[a]
        text = bang_text(x.shell, x.code or x.program, x.echoed)
        f = _tool_rule(
            w,
            text,
            (x.shell, x.program),
            x.echoed,
            "escapes !",
            refused="bang",
            declared=True,
            untestable=True,
        )
        f = attrs.evolve(f, tool=x.shell, domain=step_domain(x.shell, {"command": x.program}))
        why = (
            f"{_step_word(a)} {x.program} got '{x.echoed}' (the tool escaped a !); "
            f"{_step_word(b)} ran {x.program} without a ! and worked"
        )
        out.append(Correction(Kind.TOOL_RULE, a, b, (), f, why))
    return out


def _self_kill(t: Trajectory, recorded: Trajectory) -> list[Correction]:
    """A shell call whose ``pkill -f PATTERN`` matched the shell running it, which the
    signal ended, and a later call that stopped the same processes another way
    (:mod:`.self_kill`). The lesson is the shell tool's, one text for every such slip so
    that Stage 3 merges them; the run proves it (the pattern matches the call's own text,
    the call ended by a signal, another way worked), so no other run's way refutes it."""
    out: list[Correction] = []
    for a, b, x in _in_view(recorded, self_kills(recorded)):
        w = t.steps[a]
        text = self_kill_text(x.shell)
        f = _tool_rule(
            w,
            text,
            (x.shell, "pkill"),
            _error(w) or "killed by a signal",
            "pkill -f",
            refused="self-kill",
            how=x.how,
            declared=True,
        )
        f = attrs.evolve(f, tool=x.shell, domain=step_domain(x.shell, {"command": "pkill"}))
        why = (
            f"{_step_word(a)} pkill -f '{x.pattern[:40]}' matched its own shell, which a signal "
            f"ended; {_step_word(b)} stopped the processes {x.how}"
        )
        out.append(Correction(Kind.TOOL_RULE, a, b, (), f, why))
    return out


def _hunk_order(t: Trajectory, recorded: Trajectory) -> list[Correction]:
    """A patch that failed on a hunk placed after a hunk for lines below it, and a later
    patch of the same file that worked with those hunks, unchanged, in the file's order
    (:mod:`.hunk_order`). The lesson is the patch tool's, one text for every such slip so
    that Stage 3 merges them; the run proves it (the same lines were found once in order)."""
    out: list[Correction] = []
    for a, b, x in _in_view(recorded, hunk_orders(recorded)):
        w = t.steps[a]
        said = _error(w) or "Failed to find expected lines"
        f = _tool_rule(
            w,
            hunk_order_text(),
            (x.tool, "hunk order"),
            said,
            "Failed to find expected lines",
            refused="hunk-order",
            how="the same hunks in the file's order",
            declared=True,
        )
        why = (
            f"{_step_word(a)} {x.tool} failed to find a hunk's lines in {x.file} that an "
            f"earlier hunk of the patch came after; {_step_word(b)} sent the same hunks in "
            "the file's order and it worked"
        )
        out.append(Correction(Kind.TOOL_RULE, a, b, (), f, why))
    return out


def _literal_patch(t: Trajectory, recorded: Trajectory) -> list[Correction]:
    """A patch that failed on lines holding what the file does not (line numbers copied
    from ``nl -ba``, ``\\t`` for a tab), and a later patch of the same file that worked with
    those lines as the file holds them (:func:`.hunk_order.literal_slips`). One text for
    every slip of a kind, so that Stage 3 merges them."""
    out: list[Correction] = []
    for a, b, x in _in_view(recorded, literal_slips(recorded)):
        w = t.steps[a]
        said = _error(w) or "Failed to find expected lines"
        f = _tool_rule(
            w, literal_text(x.how), (x.tool, x.how), said, f"literal lines: {x.how}",
            refused="literal", how=x.how, declared=True,
        )  # fmt: skip
        why = (
            f"{_step_word(a)} {x.tool} failed on lines of {x.file} holding {x.how} text; "
            f"{_step_word(b)} sent them as the file holds them and it worked"
        )
        out.append(Correction(Kind.TOOL_RULE, a, b, (), f, why))
    return out


@attrs.frozen
class _Borrowed:
    failed: int
    fixed: int


def _borrowed(t: Trajectory, recorded: Trajectory) -> list[Correction]:
    """A tool refused a call for lacking a required parameter, and another tool then did
    the job with the refused call's own parameters, by name and value
    (:func:`agentmem.agents.outcomes.borrowed_params`: the filesystem MCP server's
    ``edit_file`` given the built-in Edit's ``old_string`` and ``new_string``). The error
    says what was missing, so a one-off slip teaches nothing: a lesson once the slip
    repeats (``detail["repeats"]``), in the run or the library's runs."""
    pairs = borrowed_params(recorded.steps)
    out: list[Correction] = []
    for a, b, x in _in_view(recorded, [_Borrowed(i, k) for i, k in pairs.items()]):
        w, r = recorded.steps[x.failed], recorded.steps[x.fixed]
        missing = required_missing(w) or ""
        same = [n for n, v in w.params.items() if isinstance(v, str) and v and r.params.get(n) == v]
        slips = sum(  # the run's calls of that tool refused for want of that parameter
            1 for s in recorded.steps if s.tool == w.tool and required_missing(s) == missing
        )
        said = f"{missing}: Required"
        names = " and ".join(same[:2])
        text = lesson_text(
            f"{w.tool} needs {missing} ('{said}'); {names} are parameters of {r.tool}: "
            f"pass {w.tool} its {missing}, or use {r.tool}."
        )
        f = _tool_rule(
            w, text, (w.tool, r.tool, missing), said, missing, refused="borrowed",
            how=r.tool, slips=slips, repeats=True,
        )  # fmt: skip
        why = (
            f"{_step_word(a)} {w.tool} was refused for want of {missing} (given {names}); "
            f"{r.tool} did the job with the same {names} ({_step_word(b)})"
        )
        out.append(Correction(Kind.TOOL_RULE, a, b, (), f, why))
    return out


def _unquoted(t: Trajectory) -> list[Correction]:
    """A client tool's argument check refused a parameter passed as its JSON text (an array
    written as a string), and the same call with the value itself worked
    (:func:`agentmem.agents.outcomes.unquoted_retries`): "pass X as a JSON array itself,
    not a string holding JSON". Any other schema error after a one-off slip teaches
    nothing (the error said what was wrong)."""
    out: list[Correction] = []
    for i, k in unquoted_retries(t.steps).items():
        w, r = t.steps[i], t.steps[k]
        x = next(p for p in w.params if w.params[p] != r.params[p])
        kind = "array" if isinstance(r.params[x], list) else "object"
        said = next((ln for ln in w.output.splitlines() if x in ln), "") or _error(w)
        quote = quote_error(said, 12)
        text = lesson_text(
            f"Pass the {x} parameter of {w.tool} as a JSON {kind} itself, not a string "
            f"holding JSON ('{quote}')."
        )
        how = f"{x} as a JSON {kind}"
        f = _tool_rule(w, text, (w.tool, x), said, quote, refused="encoded", how=how)
        why = (
            f"{_step_word(i)} {w.tool} refused {x} given as JSON text ('{quote}'); the same "
            f"call with {x} as a JSON {kind} worked ({_step_word(k)})"
        )
        out.append(Correction(Kind.TOOL_RULE, i, k, (), f, why))
    return out


def _read(path: str, output: str, ok: bool = False) -> Step:
    return Step(tool="Read", params={"file_path": path}, output=output, success=ok)


_EISDIR = "<tool_use_error>EISDIR: illegal operation on a directory, read</tool_use_error>"

#: The repeated slip's real examples (paraphrased from the development half: Read given a
#: folder, in several sessions of several projects), each a list of runs' steps: the
#: positive one teaches "If Read fails with 'EISDIR', it takes a file: list a folder with
#: Glob or ls"; the negative one, a single slip whose error explained itself, teaches
#: nothing (``tests/test_kinds.py`` learns both through a library).
REPEATED_SLIP: dict[str, tuple[tuple[Step, ...], ...]] = {
    "positive": (
        (_read("/w/app/test/support", _EISDIR), _read("/w/app/test/support/a.ex", "1 x", True)),
        (
            _read("/u/dots/.config/fish", _EISDIR),
            Step(tool="Glob", params={"pattern": "/u/dots/.config/fish/*"}, output="c.fish"),
        ),
    ),
    "negative": (
        (_read("/w/app/test/support", _EISDIR), _read("/w/app/test/support/a.ex", "1 x", True)),
    ),
}


def _tool_needs(t: Trajectory) -> list[Correction]:
    """A coding agent's tool refused a file for want of another call first (Claude Code's
    "File has not been read yet": :attr:`agentmem.agents.ToolSpec.needs`), the run made
    that call on the same file, and did not fail that way on it again (the record may end
    there): the tool's own rule, a prerequisite it recovers from. Its error says what to
    do, so, as for :func:`_tool_instead`, a one-off slip teaches nothing: it is a lesson
    once the slip repeats (``detail["slips"]``, ``detail["repeats"]``)."""
    out: list[Correction] = []
    steps = t.steps
    refused: dict[tuple[str, str], int] = {}  # (tool, the rule's words): its slips in the run
    for s in steps:
        spec = None if s.success else spec_for(s.tool)
        for words, _ in spec[1].needs if spec else ():
            if words in s.output:
                refused[(s.tool, words)] = refused.get((s.tool, words), 0) + 1
    for i, w in enumerate(steps):
        found = spec_for(w.tool)
        if w.success or found is None or not found[1].needs:
            continue
        path = _file_of(w)
        e = _error(w)
        kinds = [k for words, k in found[1].needs if words in w.output]
        if path is None or not kinds:
            continue
        helper = next(
            (
                k
                for k in range(i + 1, min(len(steps), i + 6))
                if steps[k].success
                and _file_of(steps[k]) == path
                and (spec_for(steps[k].tool) or found)[1].kind in kinds
            ),
            None,
        )
        if helper is None:
            continue
        changes = (
            k
            for k in range(helper + 1, len(steps))
            if _file_of(steps[k]) == path and same_job(steps[k].tool, w.tool)
        )
        words = next(words for words, _ in found[1].needs if words in w.output)
        later = next(changes, None)
        if later is not None and words in steps[later].output:
            continue  # refused the same way again after the call: not the fix
        if later is not None and not steps[later].success:
            # another mistake, or another need ("modified since read": a formatter's change)
            later = next((k for k in changes if steps[k].success), None)
        done = later if later is not None else helper
        u = steps[helper].tool
        text = tool_rule_text([w.tool], u, e)
        # the error says what to do ("Read it first before writing to it"): a one-off slip
        # teaches nothing, the rule is a lesson once the slip repeats (in this run, or merged
        # in Stage 3 with the session's or the library's runs: stages.repeated)
        slips = refused.get((w.tool, words), 1)
        f = _tool_rule(
            w, text, (w.tool, u), e, words, helper=u, declared=True, slips=slips, repeats=True
        )
        out.append(
            Correction(
                Kind.TOOL_RULE,
                i,
                done,
                (helper,),
                f,
                f"{_step_word(i)} {w.tool} failed ('{quote_error(e, 8)}'); {u} read the file "
                f"({_step_word(helper)}); {steps[done].tool} then changed it ({_step_word(done)})",
            )
        )
    return out


def _tool_rule(
    w: Step,
    text: str,
    facts: tuple[str, ...],
    error: str,
    rule_error: str,
    helper: str | None = None,
    **more: object,
) -> Finding:
    """A client tool's own rule learned from failed call ``w``: its lesson ``text`` and
    ``facts``, the ``error`` it failed with and the words of the rule (``rule_error``, what
    Stage 3 merges several tools' rules by), the ``helper`` tool it needs first (if any),
    scope ``tool``; ``more`` is the shape's own detail (``refused``, ``how``, ``slips``;
    ``declared``: the rule is the client table's, :attr:`agentmem.agents.ToolSpec.needs` or
    ``instead``, so no other run's way refutes it)."""
    detail = {"error": error, "helper": helper, "rule_error": rule_error, **more, "scope": "tool"}
    return Finding(Kind.TOOL_RULE, w.tool, _domain(w), text, facts, detail=detail)


def _names_shell(f: Finding) -> bool:
    return is_shell(f.tool) or any(is_shell(x) for x in f.facts)


def _scoped(c: Correction) -> Correction:
    """The correction with its finding's scope evidence (:func:`.evidence.scoped`)."""
    f = scoped(c.finding)
    return c if f is c.finding else attrs.evolve(c, finding=f)


def _generic_corrections(t: Trajectory) -> list[Correction]:
    steps = t.steps
    out: list[Correction] = []
    fixed: set[int] = set()
    failed_used: set[int] = set()
    for j, s in enumerate(steps):
        if not s.success or is_shell(s.tool):
            continue
        i = _retry_pair(t, j)
        if i is None:
            continue
        c = _same_step(t, i, j)
        if c is None:
            continue
        out.append(c)
        fixed.add(j)
        # every failed call of this step before i was corrected by the same retry
        for k in range(i, -1, -1):
            if steps[k].tool == s.tool and not steps[k].success:
                failed_used.add(k)
            elif steps[k].tool == s.tool:
                break
    for i, s in enumerate(steps):
        if s.success or i in failed_used or is_shell(s.tool):
            continue
        c = _other_tool(t, i, fixed)
        if c is not None:
            out.append(c)
            fixed.add(c.fixed)
            failed_used.add(i)
    return out


def correction_findings(cs: Sequence[Correction]) -> list[Finding]:
    """The findings of a run's corrections, those teaching one lesson merged."""
    from .merge import merge_findings

    return merge_findings([c.finding for c in cs])
