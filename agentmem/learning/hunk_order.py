"""A patch whose hunks were out of the file's order: Codex's ``apply_patch`` looks for each
hunk's lines only after the lines of the hunk before it, so a hunk for lines above an
earlier hunk fails ``Failed to find expected lines`` although the lines are in the file.

Pure logic: it reads a run and says which patch failed so and which later patch of the
same file worked with the same hunks in the file's order; :mod:`.corrections` turns each
into the tool's one lesson (:func:`hunk_order_text`). A slip is learned only when the run
shows all of it:

- the failed call is a patch (the ``apply_patch`` tool, or ``apply_patch`` fed the patch
  in a shell call) whose output says ``Failed to find expected lines in FILE:`` followed
  by exactly the old lines (context and removed lines) of one of its hunks, ``k``;
- within :data:`WINDOW` calls, with no other patch or write of that file between them (nor
  a shell call that does more than read), a patch of the same file worked, and it holds
  hunk ``k`` unchanged and a hunk ``j`` of that file that came before ``k`` in the failed
  patch, unchanged too, now after ``k``: the same lines,
  in the other order, were found. A retry that changed the failing hunk's lines (they
  were not in the file) or kept its order teaches nothing here.

The same failure, read by :func:`literal_slips`: a hunk whose old lines held what is no
text of the file, taken off in a later patch of the file that worked (within
:data:`WINDOW` calls, nothing else writing the file between): every line's number and tab
as ``nl -ba`` or ``cat -n`` print them (``198\t```bash``), or the two characters ``\\t``
where the file has a tab. apply_patch reads its lines literally.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import attrs

from ..agents import ToolKind, command_line, is_shell, parse, programs, spec_for
from ..agents.programs import Role
from ..records import Step, Trajectory
from .shell_fixes import reads_only

__all__ = [
    "WINDOW",
    "HunkOrder",
    "LiteralSlip",
    "hunk_order_text",
    "hunk_orders",
    "literal_slips",
    "literal_text",
]

#: How many calls after the failed patch the reordered one may come.
WINDOW = 3

#: The failure: the file, then the lines the hunk expected (all that follows).
_NOT_FOUND = "Failed to find expected lines in "
#: A patch's text inside a call's parameter.
_PATCH = re.compile(r"\*\*\* Begin Patch\n.*?(?:\*\*\* End Patch|\Z)", re.S)
#: A line with something to find (not only spaces and punctuation).
_WORDY = re.compile(r"\w{3}")


@attrs.frozen
class HunkOrder:
    """Patch call ``failed`` (tool ``tool``) failed on a hunk of ``file`` placed after a
    hunk for lines below it; call ``fixed`` patched the same file with those hunks in
    order."""

    failed: int
    fixed: int
    tool: str
    file: str


Hunk = tuple[str, tuple[str, ...]]  # (the file, as the patch names it; its old lines)


def _patch_of(step: Step) -> str | None:
    """The patch text a call sent: the ``apply_patch`` tool's input, or a patch in a shell
    call's command (a here-document, or ``apply_patch`` given it as an argument)."""
    found = spec_for(step.tool)
    if found is None or found[1].kind not in (ToolKind.PATCH, ToolKind.SHELL):
        return None
    if found[1].kind is ToolKind.SHELL and not is_shell(step.tool):
        return None
    for v in step.params.values():
        for text in v if isinstance(v, list) else [v]:
            if isinstance(text, str) and "*** Begin Patch" in text:
                if found[1].kind is ToolKind.SHELL and "apply_patch" not in str(step.params):
                    return None
                m = _PATCH.search(text)
                return m.group(0) if m else None
    return None


def hunks(patch: str) -> list[Hunk]:
    """Each ``Update File`` section's hunks, in the patch's order: the file it names and
    the hunk's old lines (context and removed lines, as the file holds them)."""
    out: list[Hunk] = []
    name: str | None = None
    cur: list[str] | None = None

    def close() -> None:
        if name is not None and cur:
            out.append((name, tuple(cur)))

    for line in patch.splitlines():
        if line.startswith("*** "):
            close()
            cur = None
            name = (
                line[len("*** Update File:") :].strip()
                if line.startswith("*** Update File:")
                else None
            )
            if name is not None:
                cur = []
            continue
        if name is None:
            continue
        if line.startswith("@@"):
            close()
            cur = []
        elif cur is not None and line[:1] in (" ", "-"):
            cur.append(line[1:])
        elif cur is not None and line == "":
            cur.append("")  # an empty context line written without its space
    close()
    return out


def _same_file(a: str, b: str) -> bool:
    """Whether two names of a file are one: equal, or one a path ending with the other."""
    a, b = a.replace("\\", "/").strip(), b.replace("\\", "/").strip()
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


def _failing(step: Step, patch: str) -> tuple[str, int] | None:
    """(the file, the index in the patch's hunks) of the hunk whose lines the failure
    printed, when exactly one hunk's old lines are what it printed."""
    # found as a string, not an expression: a lazy file name before a newline rescanned
    # the line from each repeat of the words (a megabyte of them on one line took minutes)
    at = (step.output or "").find(_NOT_FOUND)
    if at < 0:
        return None
    head, nl, rest = step.output[at + len(_NOT_FOUND) :].partition("\n")
    file = head.strip().removesuffix(":").strip()
    if not (nl and rest and file):
        return None
    said = tuple(x.rstrip() for x in rest.rstrip("\n").split("\n"))
    hs = hunks(patch)
    which = [
        n
        for n, (f, lines) in enumerate(hs)
        if _same_file(f, file) and tuple(x.rstrip() for x in lines) == said
    ]
    if len(which) != 1 or not any(_WORDY.search(x) for x in said):
        return None
    return file, which[0]


def _only_reads(step: Step) -> bool:
    """Whether every command of a shell call only reads (``nl -ba F | sed -n 1,40p``,
    ``git diff``): no redirect into a file, no ``sed -i``, no ``find -delete``. A line
    that does not parse (PowerShell) may write."""
    found = spec_for(step.tool)
    script = parse(command_line(found[1], step.params)) if found else None
    if script is None or not script.parsed:
        return False
    for c in script.commands:
        reads = reads_only(c) or programs.has(c.program, Role.SCENE)
        in_place = c.program == "sed" and any(
            a.startswith("--in-place") or (a[:1] == "-" and a[:2] != "--" and "i" in a)
            for a in c.args
        )
        acts = c.program == "find" and bool({"-delete", "-exec", "-execdir"} & set(c.args))
        if not reads or in_place or acts or any(op in (">", ">>") for op, _ in c.redirects):
            return False
    return True


def _touches(step: Step, file: str) -> bool:
    """Whether a call between the two patches may have changed the file: another patch of
    it, a write or edit tool given it, or a shell call that does more than read (``sed -i``,
    ``git checkout -- F``, a script: the file's lines may be its doing, review 34)."""
    patch = _patch_of(step)
    if patch is not None and (
        any(_same_file(f, file) for f, _ in hunks(patch)) or file.rsplit("/", 1)[-1] in patch
    ):
        return True
    if is_shell(step.tool):
        return not _only_reads(step)
    found = spec_for(step.tool)
    if found is not None and found[1].kind in (ToolKind.WRITE, ToolKind.EDIT):
        v = step.params.get(found[1].path or "file_path")
        return not isinstance(v, str) or _same_file(v, file)
    return False


def _reordered(failed: list[Hunk], k: int, fixed: list[Hunk]) -> bool:
    """Whether the fixed patch holds hunk ``k`` of the failed one and a hunk of the same
    file that came before ``k`` there, both unchanged, now in the other order (apply_patch
    seeks each file's hunks from that file's top: the order of two files' sections in a
    patch is no hunk's order)."""
    try:
        at_k = fixed.index(failed[k])
    except ValueError:
        return False
    return any(
        h in fixed and fixed.index(h) > at_k
        for h in failed[:k]
        if h != failed[k] and _same_file(h[0], failed[k][0])
    )


def hunk_orders(run: Trajectory) -> list[HunkOrder]:
    """The run's patches that failed for their hunks' order, each with the later patch of
    the same file that worked with them in order (module doc)."""
    steps = run.steps
    out: list[HunkOrder] = []
    for i, w in enumerate(steps):
        if w.success:
            continue
        patch = _patch_of(w)
        if patch is None:
            continue
        found = _failing(w, patch)
        if found is None:
            continue
        file, k = found
        before = hunks(patch)
        for n, r, later in _later_patches(steps, i, file):
            if r.success and _reordered(before, k, later):
                out.append(HunkOrder(i, n, w.tool, file))
            break
    return out


def _later_patches(
    steps: tuple[Step, ...], i: int, file: str
) -> Iterator[tuple[int, Step, list[Hunk]]]:
    """The patches of ``file`` within :data:`WINDOW` calls after call ``i``, each with its
    index and hunks, until a call that is no patch of the file may have changed it
    (:func:`_touches`)."""
    for n in range(i + 1, min(len(steps), i + 1 + WINDOW)):
        r = steps[n]
        again = _patch_of(r)
        if again is None or not any(_same_file(f, file) for f, _ in hunks(again)):
            if _touches(r, file):
                return
            continue
        yield n, r, hunks(again)


def hunk_order_text() -> str:
    """The one lesson of every such slip, so that Stage 3 merges them."""
    return (
        "apply_patch seeks each hunk's lines after the previous hunk: hunks out of the "
        "file's order fail ('Failed to find expected lines') although the lines exist. "
        "Order hunks top to bottom."
    )


@attrs.frozen
class LiteralSlip:
    """Patch call ``failed`` failed on a hunk of ``file`` whose old lines held ``how``
    (``numbered``: line numbers and tabs; ``escaped``: ``\\t`` for a tab); call ``fixed``
    patched the file with those lines as the file holds them."""

    failed: int
    fixed: int
    tool: str
    file: str
    how: str


#: A line number and its tab, as ``nl -ba`` and ``cat -n`` print them before a line.
_NUMBERED = re.compile(r"^\s*\d+\t")


def _as_file_holds(lines: tuple[str, ...], how: str) -> tuple[str, ...] | None:
    """``lines`` with ``how`` taken off, or None when they do not hold it: ``numbered``,
    every line's number and tab; ``escaped``, each ``\\t`` made a tab."""
    if how == "numbered":
        if not all(_NUMBERED.match(x) for x in lines if x):
            return None
        return tuple(_NUMBERED.sub("", x) for x in lines)
    if not any("\\t" in x for x in lines):
        return None
    return tuple(x.replace("\\t", "\t") for x in lines)


def _part_of(lines: tuple[str, ...], want: tuple[str, ...], old: tuple[str, ...]) -> bool:
    """Whether a hunk's old lines are ``want``, or a run of them with words in it (the
    retry may patch fewer of the same lines) that holds a line the slip changed (``old``:
    the failed hunk's lines): a run of lines as they were shows nothing of the slip."""
    n = len(lines)
    if not n or not any(_WORDY.search(x) for x in lines):
        return False
    return any(
        want[k : k + n] == lines and want[k : k + n] != old[k : k + n]
        for k in range(len(want) - n + 1)
    )


def literal_slips(run: Trajectory) -> list[LiteralSlip]:
    """The run's patches that failed on lines holding what the file does not (module doc),
    each with the later patch of the same file that worked with those lines (or a run of
    them) as the file holds them. A failed patch between, of the same slip, is passed over."""
    steps = run.steps
    out: list[LiteralSlip] = []
    for i, w in enumerate(steps):
        patch = None if w.success else _patch_of(w)
        found = _failing(w, patch) if patch is not None else None
        if found is None or patch is None:
            continue
        file, k = found
        old = hunks(patch)[k][1]
        for how in ("numbered", "escaped"):
            want = _as_file_holds(old, how)
            if want is None:
                continue
            for n, r, later in _later_patches(steps, i, file):
                if not r.success:
                    continue  # the same slip again, perhaps: the next patch decides
                if any(_same_file(f, file) and _part_of(lines, want, old) for f, lines in later):
                    out.append(LiteralSlip(i, n, w.tool, file, how))
                break
    return out


def literal_text(how: str) -> str:
    """The one lesson of every slip of ``how``, so that Stage 3 merges them."""
    if how == "numbered":
        return (
            "apply_patch context lines must be the file's own text: lines copied from nl -ba "
            "or cat -n carry line numbers and never match ('Failed to find expected lines'); "
            "drop the number prefixes."
        )
    return (
        "apply_patch reads its lines literally: a tab must be a real tab character, not the "
        "two characters \\t ('Failed to find expected lines')."
    )
