"""Redacting a whole run: every text a trajectory holds, as one value that storage accepts.

A run reaches the library by many paths (``Memory.record``, ``agentmem record`` and
``import``, the hooks, MCP, the team's inbox), and all of them end in
:func:`agentmem.storage.trajectories.insert_trajectories`. That function stores
:class:`Redacted` runs as they are and redacts anything else with the built-in rules
first, so redaction is a property of the value that enters storage, not a step each
path has to remember. Only :func:`redact_run` makes a :class:`Redacted`.

What a run holds, and how each part is redacted:

* the task, the condition, the source and each tool's name: as text;
* the group key: derived again from the redacted task when it is the task's default
  key (:func:`agentmem.records.normalise_group`), so equal tasks still share a group
  (a secret always becomes the same placeholder); a key of the caller's own is
  redacted as text;
* ``meta``, each step's parameters and the essential actions: every key and string,
  at any depth (:meth:`~agentmem.redact.Redactor.value`); agentmem's own identifiers
  in ``meta`` (a transcript's session and turn, the machine) as text only, so the
  key-name rule (``session_id = ...``) leaves a real id be but a token planted there
  still goes;
* each output: cut to the library's cap first, and only what is kept redacted
  (:func:`agentmem.outputs.cap_and_redact`).

One scan of the whole run (:meth:`~agentmem.redact.Redactor.needing`) says which of
its parts (the task, each output, each step's parameters, ...) hold anything a rule
looks for; only those are redacted, and a run that holds nothing is returned as it is.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Mapping
from typing import Any

import attrs

from ..outputs import MIN_OUTPUT_CAP, cap_and_redact, fits_cap
from ..records import MAX_TOOL_NAME, Step, Trajectory, normalise_group
from .base import PLACEHOLDER_PREFIX
from .engine import Redactor

__all__ = [
    "OWN_IDS",
    "PATH_KEYS",
    "Redacted",
    "group_of",
    "redact_group",
    "redact_meta",
    "redact_path",
    "redact_run",
]

#: Meta keys that hold agentmem's and the clients' own identifiers (a transcript's session
#: and turn, the machine's salted hash): what imports, the served log and scoping match
#: runs by. Redacted as text only: the key-name rules (``session_id = ...``) would take
#: every id whole, but a token of a known shape planted there is still taken out.
OWN_IDS = frozenset({"session_id", "turn_id", "machine", "agent_id"})

_PLACEHOLDER = re.compile(re.escape(PLACEHOLDER_PREFIX) + r"[a-z0-9_]+\]")
_LOWER_PLACEHOLDER = re.compile(re.escape(PLACEHOLDER_PREFIX.lower()) + r"([a-z0-9_]+)\]")


@attrs.frozen
class Redacted:
    """A trajectory every text of which went through a :class:`Redactor` (or through a
    disabled one, by the library owner's choice): what storage records as it is.

    Made by :func:`redact_run` only; storage redacts any other trajectory itself.
    """

    trajectory: Trajectory


def group_of(redacted_task: str) -> str:
    """The default group key of a task that is redacted already: its
    :func:`~agentmem.records.normalise_group`, placeholders kept upper-case
    (``the password is [REDACTED:password]``) so they read as placeholders."""
    return _placeholders_upper(normalise_group(redacted_task))


def _placeholders_upper(key: str) -> str:
    """A group key with its (lower-cased) placeholders upper-case again."""
    if PLACEHOLDER_PREFIX.lower() not in key:
        return key
    return _LOWER_PLACEHOLDER.sub(lambda m: f"{PLACEHOLDER_PREFIX}{m.group(1)}]", key)


def redact_group(group: str, redacted_task: str, r: Redactor) -> str:
    """A stored group key as it may leave the library, given its run's (redacted) task.

    A run recorded before group keys were redacted has the default key of its raw task:
    the redacted task's key with each placeholder standing for a secret. Such a key
    becomes :func:`group_of` the redacted task; any other is redacted as text.
    """
    key = group_of(redacted_task)
    if group == key:
        return group
    if PLACEHOLDER_PREFIX in key and _fits(_PLACEHOLDER.split(key), group):
        return key
    return r.text(group)


def _fits(parts: list[str], text: str) -> bool:
    """Whether ``text`` is ``parts`` in order with something (not nothing) between each
    two: a wildcard match, in linear time (the leftmost place of each middle part)."""
    first, last = parts[0], parts[-1]
    if not text.startswith(first):
        return False
    pos = len(first)
    for p in parts[1:-1]:
        i = text.find(p, pos + 1)
        if i < 0:
            return False
        pos = i + len(p)
    return len(text) - len(last) > pos and text.endswith(last)


def redact_path(r: Redactor, path: str) -> str:
    """A file's or folder's path redacted, a secret hidden in a folder's name behind a
    ``-`` included: Claude Code names a project's folder after its path (``/w/TOKEN/app``
    becomes ``-w-TOKEN-app``), and a token that a word or ``-`` runs into is no token to
    the rules. So what follows each ``-`` of a name that may hold a secret is redacted
    as a text of its own too."""
    parts = r.text(path).split("/")
    for n, name in enumerate(parts):
        if "-" not in name or len(name) > _NAME_MAX or not r.needs(name):
            continue  # (no folder's name is longer: this bounds the cost)
        at = name.find("-")
        while 0 <= at < len(name) - 1:
            rest = name[at + 1 :]
            red = r.text(rest)
            if red != rest:
                name = name[: at + 1] + red
            at = name.find("-", at + 1)
        parts[n] = name
    return "/".join(parts)


#: The longest name of a file or folder (most file systems): longer is no name.
_NAME_MAX = 255
#: Meta keys that hold a path (:func:`redact_path`).
PATH_KEYS = frozenset({"cwd", "project", "session_cwd", "transcript"})
#: Meta keys that hold paths by call (``cwds``: {a call's index: its folder}).
PATH_MAP_KEYS = frozenset({"cwds"})


def _path_map(v: Any) -> bool:
    """Whether ``v`` is {a call's index: a path}, as the importer writes ``cwds``."""
    return isinstance(v, dict) and all(
        isinstance(n, str) and n.isdigit() and isinstance(p, str) for n, p in v.items()
    )


def redact_meta(r: Redactor, meta: Mapping[str, Any], *, keep: bool = False) -> dict[str, Any]:
    """``meta`` redacted, keys included; the identifiers in :data:`OWN_IDS` (when
    strings) as text only, the paths of :data:`PATH_KEYS` by :func:`redact_path`.
    ``keep``: ``meta`` itself (a dict) when nothing in it changes (see
    :meth:`~agentmem.redact.Redactor.value`).

    One scan of every key and value (a value that is no string by its repr, which holds
    every key and string in it) says which need redacting: a key and value that hold no
    needle (and a key that holds none names no secret) stay as they are.
    """
    items = list(meta.items())
    texts = [
        x
        for k, v in items
        for x in (k if isinstance(k, str) else repr(k), v if isinstance(v, str) else repr(v))
    ]
    flags = r.needing(texts)
    out: dict[str, Any] = {}
    same = keep and type(meta) is dict
    for n, (k, v) in enumerate(items):
        key_needs, value_needs = flags[2 * n], flags[2 * n + 1]
        if k in OWN_IDS and isinstance(v, str):
            new = r.text(v) if value_needs else v
            out[k] = new
            same = same and new is v
        elif k in PATH_KEYS and isinstance(v, str):
            new = redact_path(r, v) if value_needs else v
            out[k] = new
            same = same and new == v
        elif k in PATH_MAP_KEYS and _path_map(v) and value_needs:
            out[k] = {n: redact_path(r, p) for n, p in v.items()}
            same = same and out[k] == v
        elif not (key_needs or value_needs):
            out[k] = v  # (what redacting it would give)
        else:  # a key that is a secret becomes its placeholder
            one = {k: v}
            got = r.value(one, keep=same)
            out.update(got)
            same = same and got is one
    return meta if same else out  # type: ignore[return-value]


def _redacted_steps(
    t: Trajectory, r: Redactor, cap: int, long: list[bool], tools: list[bool], params: list[bool]
) -> tuple[list[Step], bool]:
    """``t``'s steps with their outputs cut (where ``long``) and redacted, and the tools and
    parameters the scan flagged redacted; whether any step changed. A step that did not
    change is the same object."""
    steps = []
    changed = False
    for s, cut, flag_tool, flag_params in zip(t.steps, long, tools, params, strict=True):
        output = cap_and_redact(s.output, cap, r.text) if cut else r.text(s.output)
        tool = r.text(s.tool)[:MAX_TOOL_NAME] if flag_tool else s.tool
        args = r.value(s.params, keep=True) if flag_params else s.params
        if output is not s.output or tool is not s.tool or args is not s.params:
            s = attrs.evolve(s, tool=tool, params=args, output=output)
            changed = True
        steps.append(s)
    return steps, changed


def redact_run(t: Trajectory, r: Redactor, cap: int) -> Redacted:
    """``t`` with every text redacted by ``r`` (see the module doc) and every output over
    ``cap`` bytes (0: no cap) cut first; the same object inside when nothing changes."""
    if not r.enabled:
        return Redacted(t)  # the owner's choice: stored as given
    default_group = t.group == normalise_group(t.task)
    # Long outputs are cut first and only what is kept is redacted (agentmem.outputs);
    # they stay out of the scan below, which would cost a scan of all of each.
    if not any(len(s.output) * 4 > MIN_OUTPUT_CAP for s in t.steps):
        cap = 0
    long = [not fits_cap(s.output, cap) for s in t.steps]
    # Each output is redacted on its own (Redactor.text: one scan when it holds nothing);
    # one scan of the rest of the run says which of its parts hold a needle
    # (Redactor.needing): most hold none, and only those that do are redacted. Every key
    # and string of the parameters, meta and essential actions occurs in their repr.
    # A part whose redaction changes nothing is kept as it is (Redactor.value's
    # ``keep``), so a step or a run is made again (and checked again) only where
    # something changed.
    acts = t.essential_actions
    n = len(t.steps)
    parts = [
        t.task,
        "" if default_group else t.group,
        t.condition or "",
        t.source,
        repr(t.meta),
        repr(acts) if acts else "",
        *(s.tool for s in t.steps),
        *(repr(s.params) for s in t.steps),
    ]
    flags = r.needing(parts)
    steps, changed = _redacted_steps(t, r, cap, long, flags[6 : 6 + n], flags[6 + n :])
    # Whether anything in the run (long outputs aside) holds a needle: then a default group
    # key is derived from the task again (group_of), which differs from the stored one
    # only where the task holds a placeholder already; only then are the outputs asked.
    kept = [(s.output, x.output) for s, x, cut in zip(t.steps, steps, long, strict=True) if not cut]
    need = (
        any(flags)
        or any(a is not b for a, b in kept)
        or (default_group and group_of(t.task) != t.group and any(r.needing([a for a, _ in kept])))
    )
    if not need and not any(long):
        return Redacted(t)
    if not need:
        return Redacted(attrs.evolve(t, steps=tuple(steps)))
    task = r.text(t.task) if flags[0] else t.task
    group = t.group if not flags[1] else r.text(t.group)
    if default_group:  # (an unchanged task's key is the one it has: no need to derive it)
        group = _placeholders_upper(t.group) if task is t.task else group_of(task)
    condition = t.condition if not flags[2] or t.condition is None else r.text(t.condition)
    source = r.text(t.source) if flags[3] else t.source
    meta = redact_meta(r, t.meta, keep=True) if flags[4] else t.meta
    if acts and flags[5]:
        new_acts = tuple(r.value(a, keep=True) for a in acts)
        if not all(map(operator.is_, new_acts, acts)):
            acts = new_acts
    if (
        task is t.task
        and group == t.group
        and condition is t.condition
        and source is t.source
        and meta is t.meta
        and acts is t.essential_actions
    ):  # nothing but (maybe) the steps changed
        return Redacted(attrs.evolve(t, steps=tuple(steps)) if changed else t)
    return Redacted(
        attrs.evolve(
            t,
            task=task,
            group=group,
            condition=condition,
            source=source,
            meta=meta,
            essential_actions=acts,
            steps=tuple(steps),
        )
    )
