"""Measure the packaged local models on the job agentmem gives them.

agentmem derives a lesson from trajectory data; the model only rephrases it
("rephrase": one clear sentence, <= 32 words, saying when and how) or shrinks a
long one ("compress": <= 32 words). This script runs every installed packaged
model over 20 realistic lessons to rephrase and 10 to compress, in several prompt styles, and checks
each output:

* ``nonempty``   -- some text came back;
* ``<=32w``      -- at most 32 words;
* ``tools``      -- every tool name of the lesson appears verbatim;
* ``params``     -- every parameter name of the lesson appears verbatim (reported,
  not part of ``pass``: a 32-word sentence cannot always keep them all);
* ``no_echo``    -- the instruction text is not repeated and the lesson is not
  copied word for word;
* ``no_invent``  -- no snake_case/camelCase identifier that is not in the lesson
  (this also catches copying the few-shot example, whose names are unique);
* ``no_copy``    -- shares no 4-word run with the few-shot example answer that is
  not also in the lesson (weak models copy examples);
* ``complete``   -- ends like a sentence (not cut off by ``max_tokens``).

``pass`` = all of these but ``params``,
measured after :func:`clean` (first line, leading label and quotes removed),
which is what a caller should do with the raw text. ``raw`` is the pass rate
without cleaning.

It also measures load time, prompt-processing and generation speed.

Run:  python benchmarks/bench_models.py [--models smollm2,gemma3-270m]
      [--styles NAME,...] [--show]   (--show prints every output)

Models that are not installed are skipped.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agentmem.errors import ModelError
from agentmem.models import LlamaCppModel, packaged_model_path

# --------------------------------------------------------------------------- cases


@dataclass(frozen=True)
class Case:
    """One lesson to rephrase or compress, with the names it must keep."""

    domain: str
    lesson: str
    tools: tuple[str, ...]
    params: tuple[str, ...] = ()


REPHRASE: tuple[Case, ...] = (
    Case(
        "airline",
        "When calling book_reservation, after error 'payment amount does not add up', "
        "the successful runs first called search_direct_flight to get the price and set "
        "payment amount equal to total price; failed runs retried with the same amount.",
        ("book_reservation", "search_direct_flight"),
        (),
    ),
    Case(
        "retail",
        "When calling exchange_delivered_order_items, after error 'payment method not "
        "found', successful runs first called get_user_details to read payment_method_id "
        "and passed it unchanged; failed runs guessed a payment_method_id such as "
        "credit_card_1.",
        ("exchange_delivered_order_items", "get_user_details"),
        ("payment_method_id",),
    ),
    Case(
        "coding",
        "When calling apply_patch, after error 'hunk failed to apply', successful runs "
        "first called read_file on the same path to get the current content and rebuilt "
        "the patch from it; failed runs applied the old patch again unchanged.",
        ("apply_patch", "read_file"),
        ("path",),
    ),
    Case(
        "sql",
        "When calling run_query on the orders table, after error 'column created does not "
        "exist', successful runs called describe_table first and used the column name "
        "created_at; failed runs kept guessing other column names.",
        ("run_query", "describe_table"),
        ("created_at",),
    ),
    Case(
        "calendar",
        "When calling create_event with attendees, after error 'invalid datetime format', "
        "successful runs passed start_time in ISO 8601 with a timezone offset, for "
        "example 2024-05-01T09:00:00+02:00; failed runs passed text like '9am tomorrow'.",
        ("create_event",),
        ("start_time",),
    ),
    Case(
        "web",
        "When calling fetch_url, after error 'HTTP 429 Too Many Requests', successful "
        "runs waited a few seconds and fetched pages one at a time, or used web_search "
        "snippets instead; failed runs immediately retried all requests in parallel.",
        ("fetch_url", "web_search"),
        (),
    ),
    Case(
        "kubernetes",
        "When calling kubectl_apply, after error 'namespaces \"staging\" not found', "
        "successful runs first called kubectl_create_namespace with the same namespace "
        "and then repeated kubectl_apply; failed runs deleted the namespace field.",
        ("kubectl_apply", "kubectl_create_namespace"),
        ("namespace",),
    ),
    Case(
        "files",
        "Before calling write_file on a path that already exists, successful runs called "
        "read_file first and passed overwrite=true; runs that left out overwrite got the "
        "error 'file exists' and 73% of them gave up on the task.",
        ("write_file", "read_file"),
        ("overwrite",),
    ),
    Case(
        "email",
        "When calling send_email with an attachment, successful runs first called "
        "upload_attachment to get an attachment_id and passed attachment_ids with that "
        "id; failed runs put the local file path in the body and got 'attachment missing'.",
        ("send_email", "upload_attachment"),
        ("attachment_ids",),
    ),
    Case(
        "payments",
        "When calling refund_payment, successful runs passed amount as an integer number "
        "of cents such as 1999, copied from get_transaction; failed runs passed a decimal "
        "string like '19.99' and got error 'amount must be integer'.",
        ("refund_payment", "get_transaction"),
        ("amount",),
    ),
    Case(
        "github",
        "When calling create_pull_request, after error 'head branch not found', successful "
        "runs first called push_branch with the same branch name and then retried "
        "create_pull_request; failed runs changed the base parameter to main and failed again.",
        ("create_pull_request", "push_branch"),
        ("base",),
    ),
    Case(
        "shell",
        "When calling run_command with a long-running build, successful runs passed "
        "timeout_seconds of 600 or more and read the tail of the output with read_log; failed "
        "runs used the default timeout of 30 seconds and the command was killed.",
        ("run_command", "read_log"),
        ("timeout_seconds",),
    ),
    Case(
        "docker",
        "When calling docker_run, after error 'port is already allocated', successful runs "
        "called docker_ps to find the container using the port and either stopped it with "
        "docker_stop or chose another host_port; failed runs retried docker_run unchanged.",
        ("docker_run", "docker_ps", "docker_stop"),
        ("host_port",),
    ),
    Case(
        "maps",
        "When calling get_directions for a street address, successful runs first called "
        "geocode to turn the address into latitude and longitude and passed those as origin; "
        "failed runs passed the raw address text and got error 'invalid coordinates'.",
        ("get_directions", "geocode"),
        ("origin",),
    ),
    Case(
        "spreadsheet",
        "When calling update_cells, after error 'range exceeds grid limits', successful runs "
        "called get_sheet_properties to read row_count and column_count and trimmed the range "
        "to fit; failed runs retried update_cells with the same range.",
        ("update_cells", "get_sheet_properties"),
        ("row_count",),
    ),
    Case(
        "slack",
        "When calling post_message to a channel by name, successful runs first called "
        "list_channels to find the channel_id and passed channel_id instead of the name; "
        "failed runs passed '#general' as the channel and got error 'channel_not_found'.",
        ("post_message", "list_channels"),
        ("channel_id",),
    ),
    Case(
        "invoices",
        "When calling create_invoice for an existing customer, successful runs called "
        "find_customer with the email to reuse its customer_id; failed runs created a new "
        "customer each time with create_customer and left duplicate records behind.",
        ("create_invoice", "find_customer", "create_customer"),
        ("customer_id",),
    ),
    Case(
        "hotel",
        "When calling book_hotel_room, after error 'rate expired', successful runs called "
        "search_hotels again with the same check_in and check_out dates to get a fresh "
        "rate_id and booked with it; failed runs reused the old rate_id several times.",
        ("book_hotel_room", "search_hotels"),
        ("rate_id",),
    ),
    Case(
        "tickets",
        "When calling update_issue to close a ticket, after error 'transition not allowed', "
        "successful runs called get_transitions to find the valid transition_id and used it; "
        "failed runs tried to set the status field directly to 'Done'.",
        ("update_issue", "get_transitions"),
        ("transition_id",),
    ),
    Case(
        "weather",
        "When calling get_forecast for a city whose name is shared by several places, "
        "successful runs first called search_location and passed the returned location_id "
        "with the country; failed runs passed only the city name and got the wrong city.",
        ("get_forecast", "search_location"),
        ("location_id",),
    ),
)

COMPRESS: tuple[Case, ...] = (
    Case(
        "airline",
        "When a book_reservation call fails with 'payment amount does not add up', do not "
        "retry with the same numbers. In the successful runs the agent called "
        "search_direct_flight again for the chosen flight, read the price of every "
        "passenger, added them to a total, and then called book_reservation with payment "
        "amount exactly equal to that total. Failed runs kept the old amount and "
        "retried three or more times.",
        ("book_reservation", "search_direct_flight"),
        (),
    ),
    Case(
        "retail",
        "Orders that were already delivered cannot be cancelled. When the user asks to "
        "cancel such an order, successful runs called get_order_details, saw status "
        "delivered, and offered return_delivered_order_items instead, passing the item_ids "
        "and the original payment_method_id from the order. Failed runs called "
        "cancel_pending_order, got error 'non-pending order cannot be cancelled', and then "
        "told the user it was impossible.",
        ("get_order_details", "return_delivered_order_items", "cancel_pending_order"),
        ("item_ids", "payment_method_id"),
    ),
    Case(
        "coding",
        "When the test suite fails after an edit, successful runs called run_tests with "
        "the single failing test id first, read the assertion message, opened the file "
        "with read_file at the line from the traceback, and made one small fix before "
        "rerunning the whole suite. Failed runs rewrote large parts of the module at "
        "once and called run_tests on everything after each change, running out of steps.",
        ("run_tests", "read_file"),
        (),
    ),
    Case(
        "sql",
        "Queries against the events table time out when they scan all rows. Successful "
        "runs first called describe_table to find the indexed column event_date, then "
        "called run_query with a WHERE clause on event_date and a LIMIT of 100, and only "
        "widened the range when needed. Failed runs called run_query with SELECT * and no "
        "filter and got error 'statement timeout'.",
        ("describe_table", "run_query"),
        ("event_date",),
    ),
    Case(
        "calendar",
        "Scheduling a meeting for several people often fails on conflicts. Successful "
        "runs called find_free_slots with all attendee emails and the duration_minutes, "
        "picked the first returned slot, and then called create_event with that exact "
        "start_time. Failed runs called create_event directly with a guessed time, got "
        "error 'attendee busy', and kept trying nearby times one by one.",
        ("find_free_slots", "create_event"),
        ("duration_minutes", "start_time"),
    ),
    Case(
        "web",
        "For questions about recent events, the successful runs called web_search with a "
        "short query containing the year, opened the two most relevant results with "
        "fetch_url, and answered only from those pages, citing them. Failed runs answered "
        "from memory without searching, or called fetch_url on URLs they made up, which "
        "returned error 404 and wasted several steps.",
        ("web_search", "fetch_url"),
        (),
    ),
    Case(
        "kubernetes",
        "When a deployment does not become ready, successful runs called kubectl_get_pods "
        "with the deployment label, then kubectl_logs on the crashing pod with "
        "previous=true to see the error of the last restart, and fixed the image tag or "
        "environment variable it named. Failed runs only called kubectl_rollout_restart "
        "again and again, which never changed the outcome.",
        ("kubectl_get_pods", "kubectl_logs", "kubectl_rollout_restart"),
        ("previous",),
    ),
    Case(
        "files",
        "Large log files break the context window. Successful runs called file_stat to "
        "get the size first, and for files over one megabyte called read_file with "
        "offset and limit to read only the last 200 lines, or grep_file with the error "
        "pattern. Failed runs called read_file on the whole file, got truncated output, "
        "and then guessed at the cause of the failure.",
        ("file_stat", "read_file", "grep_file"),
        ("offset", "limit"),
    ),
    Case(
        "email",
        "Replies must stay in the same thread. Successful runs called search_inbox to "
        "find the original message, took its thread_id and message_id, and called "
        "send_email with thread_id and in_reply_to set to those values and the subject "
        "starting with 'Re:'. Failed runs called send_email with only the address and "
        "subject, which started a new conversation the user then complained about.",
        ("search_inbox", "send_email"),
        ("thread_id", "in_reply_to"),
    ),
    Case(
        "telecom",
        "When a customer reports no mobile data, successful runs called "
        "get_line_details first, checked that data_enabled was false or that the "
        "roaming flag was off while abroad, and called toggle_data or enable_roaming "
        "accordingly before anything else. Failed runs went straight to "
        "reset_network_settings or suggested buying a new SIM card, and the problem "
        "stayed unsolved at the end.",
        ("get_line_details", "toggle_data", "enable_roaming", "reset_network_settings"),
        ("data_enabled",),
    ),
)

# --------------------------------------------------------------------------- styles

REPHRASE_INSTRUCTION = (
    "Rewrite this tool-use lesson as one clear sentence of at most 32 words, saying "
    "when and how to apply it. Keep every tool name and parameter name exactly."
)
COMPRESS_INSTRUCTION = (
    "Summarize this tool-use lesson in at most 32 words, preserving the actionable "
    "core: when it applies and what to do. Keep every tool name exactly."
)

# The few-shot example uses names that appear in no case, so copying it is caught
# by the ``no_invent`` check (reserve_table, list_open_slots, party_size).
EXAMPLE_LESSON = (
    "When calling reserve_table, after error 'no availability', successful runs first "
    "called list_open_slots for the same date and retried reserve_table with a listed "
    "slot and the same party_size; failed runs retried the same time."
)
EXAMPLE_REPHRASED = (
    "When reserve_table fails with 'no availability', call list_open_slots for that "
    "date and retry reserve_table with a listed slot and the same party_size."
)
EXAMPLE_LONG = (
    "Restaurant bookings often fail when the requested time is full. In successful runs "
    "the agent did not retry the same time; it called list_open_slots with the date and "
    "party_size, offered the user the two closest slots, and then called reserve_table "
    "with the chosen slot. Failed runs retried reserve_table with the same time until "
    "they ran out of steps."
)
EXAMPLE_COMPRESSED = (
    "When reserve_table finds the time full, call list_open_slots with the date and "
    "party_size, offer the closest slots, then call reserve_table with the chosen one."
)


@dataclass(frozen=True)
class Style:
    """A way of asking: chat template or raw text, the prompt, stops and budget."""

    name: str
    chat: bool
    rephrase: str  # format strings with {lesson}
    compress: str
    stop: tuple[str, ...] = ()
    max_tokens: int = 64
    only: tuple[str, ...] = ()  # run only for these models (empty: all)
    examples: tuple[str, ...] = ()  # example answers whose copying is a failure


# The brief's plain form: instruction, then the lesson; the answer is whatever follows.
PLAIN_REPHRASE = REPHRASE_INSTRUCTION + "\n\nLesson: {lesson}"
PLAIN_COMPRESS = COMPRESS_INSTRUCTION + "\n\nLesson: {lesson}"
# Labelled: the prompt ends with the label of the answer, which also suits base models.
ZERO_REPHRASE = REPHRASE_INSTRUCTION + "\n\nLesson: {lesson}\nSentence:"
ZERO_COMPRESS = COMPRESS_INSTRUCTION + "\n\nLesson: {lesson}\nSummary:"
# One example first (fixed text first, so llama.cpp reuses its cached prefix).
FEW_REPHRASE = (
    REPHRASE_INSTRUCTION
    + f"\n\nLesson: {EXAMPLE_LESSON}\nSentence: {EXAMPLE_REPHRASED}"
    + "\n\nLesson: {lesson}\nSentence:"
)
FEW_COMPRESS = (
    COMPRESS_INSTRUCTION
    + f"\n\nLesson: {EXAMPLE_LONG}\nSummary: {EXAMPLE_COMPRESSED}"
    + "\n\nLesson: {lesson}\nSummary:"
)
_STOPS = ("\n\n", "\nLesson:")
_EXAMPLES = (EXAMPLE_LESSON, EXAMPLE_REPHRASED, EXAMPLE_LONG, EXAMPLE_COMPRESSED)

STYLES: tuple[Style, ...] = (
    Style("chat-plain", chat=True, rephrase=PLAIN_REPHRASE, compress=PLAIN_COMPRESS),
    Style(
        "chat-plain-stop",
        chat=True,
        rephrase=PLAIN_REPHRASE,
        compress=PLAIN_COMPRESS,
        stop=("\n",),
    ),
    Style(
        "chat-lesson-first",
        chat=True,
        rephrase="Lesson: {lesson}\n\n" + REPHRASE_INSTRUCTION,
        compress="Lesson: {lesson}\n\n" + COMPRESS_INSTRUCTION,
        stop=("\n",),
    ),
    Style("chat-zero", chat=True, rephrase=ZERO_REPHRASE, compress=ZERO_COMPRESS, stop=_STOPS),
    Style("raw-zero", chat=False, rephrase=ZERO_REPHRASE, compress=ZERO_COMPRESS, stop=_STOPS),
    Style(
        "chat-few",
        chat=True,
        rephrase=FEW_REPHRASE,
        compress=FEW_COMPRESS,
        stop=_STOPS,
        examples=_EXAMPLES,
    ),
    Style(
        "raw-few",
        chat=False,
        rephrase=FEW_REPHRASE,
        compress=FEW_COMPRESS,
        stop=_STOPS,
        examples=_EXAMPLES,
    ),
    # Gemma 3's turn markup, written by hand: the packaged base model has no chat
    # template, but its tokenizer knows the turn tokens.
    Style(
        "raw-gemma-turns",
        chat=False,
        rephrase="<start_of_turn>user\n" + PLAIN_REPHRASE + "<end_of_turn>\n<start_of_turn>model\n",
        compress="<start_of_turn>user\n" + PLAIN_COMPRESS + "<end_of_turn>\n<start_of_turn>model\n",
        stop=("\n", "<end_of_turn>"),
        only=("gemma3-270m",),
    ),
)

# --------------------------------------------------------------------------- checks

_IDENT = re.compile(r"\b(?:[A-Za-z][a-z0-9]*_[A-Za-z0-9_]+|[a-z]+[A-Z][A-Za-z0-9]+)\b")
_LABEL = re.compile(
    r"^\s*(?:\*\*)?(?:rewritten lesson|rewritten|lesson|sentence|summary|answer|output"
    r"|example sentence|example summary)\s*:?\s*(?:\*\*)?\s*:?\s*",
    re.IGNORECASE,
)
_ECHO = (
    "rewrite this",
    "at most 32 words",
    "32 words",
    "summarize this",
    "actionable core",
    "keep every tool name",
    "tool-use lesson",
)


def clean(text: str) -> str:
    """What a caller should do with raw model text: first line, no label, no quotes."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    first = lines[0] if lines else ""
    first = _LABEL.sub("", first).strip()
    return first.strip("\"'`* ").strip()


def words(text: str) -> int:
    """Word count as the 32-word rule counts it (whitespace-separated)."""
    return len(text.split())


def _ngrams(text: str, n: int = 4) -> set[tuple[str, ...]]:
    toks = re.findall(r"[a-z0-9_']+", text.lower())
    return {tuple(toks[i : i + n]) for i in range(len(toks) - n + 1)}


def check(case: Case, text: str, examples: Sequence[str] = ()) -> dict[str, bool]:
    """The named checks for one output; ``examples`` are few-shot answers not to copy."""
    low = text.lower()
    lesson_grams = _ngrams(case.lesson)
    example_grams = set().union(*(_ngrams(e) for e in examples)) - lesson_grams
    copied = bool(_ngrams(text) & example_grams)
    allowed = set(_IDENT.findall(case.lesson))
    invented = [w for w in _IDENT.findall(text) if w not in allowed]
    lesson_norm = " ".join(case.lesson.lower().split())
    result = {
        "nonempty": bool(text.strip()),
        "<=32w": 0 < words(text) <= 32,
        "tools": all(t in text for t in case.tools),
        "params": all(p in text for p in case.params),
        "no_echo": not any(e in low for e in _ECHO)
        and " ".join(low.split()) != lesson_norm
        and not low.startswith("lesson"),
        "no_invent": not invented,
        "no_copy": not copied,
        "complete": text.rstrip().endswith((".", "!", "?", '."', ".'")),
    }
    result["pass"] = all(v for k, v in result.items() if k != "params")
    return result


# --------------------------------------------------------------------------- runs


@dataclass
class Row:
    """Aggregated results for one model, style and task."""

    model: str
    style: str
    task: str
    checks: list[dict[str, bool]] = field(default_factory=list)
    raw_pass: list[bool] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    nwords: list[int] = field(default_factory=list)

    def rate(self, key: str) -> str:
        """Share of outputs passing check ``key``, as 'k/n'."""
        return f"{sum(c[key] for c in self.checks)}/{len(self.checks)}"


def speed(model: LlamaCppModel) -> dict[str, float]:
    """Load seconds, prompt tokens/s (about 1,000-token prompt) and generation tokens/s."""
    t0 = time.perf_counter()
    llm = model.load()
    load_s = time.perf_counter() - t0
    long_prompt = " ".join([c.lesson for c in COMPRESS] * 3)
    llm.reset()
    t0 = time.perf_counter()
    out = llm.create_completion(long_prompt, max_tokens=1, temperature=0.0)
    pp_s = time.perf_counter() - t0
    pp = out["usage"]["prompt_tokens"] / pp_s
    llm.reset()
    short = "List ten tools an agent might call, one per line:\n1."
    t0 = time.perf_counter()
    out = llm.create_completion(
        short, max_tokens=128, temperature=0.0, logit_bias={llm.token_eos(): -100.0}
    )
    total = time.perf_counter() - t0
    n_prompt = out["usage"]["prompt_tokens"]
    gen_s = max(total - n_prompt / pp, 1e-6)
    return {
        "load_s": load_s,
        "pp_tok_s": pp,
        "pp_tokens": float(out["usage"]["prompt_tokens"]),
        "gen_tok_s": out["usage"]["completion_tokens"] / gen_s,
        "has_template": float(bool(llm.metadata.get("tokenizer.chat_template"))),
    }


def run(
    names: Sequence[str], styles: Sequence[Style], show: bool
) -> tuple[list[Row], dict[str, dict[str, float]]]:
    """Run every model and style over both task sets."""
    rows: list[Row] = []
    speeds: dict[str, dict[str, float]] = {}
    for name in names:
        try:
            path = packaged_model_path(name)
        except ModelError as exc:
            print(f"skip {name}: {exc}", file=sys.stderr)
            continue
        base = LlamaCppModel(path, model_id=name)
        try:
            speeds[name] = speed(base)
        except ModelError as exc:
            print(f"skip {name}: {exc}", file=sys.stderr)
            continue
        for style in styles:
            if style.only and name not in style.only:
                continue
            if style.chat and not speeds[name]["has_template"]:
                print(f"skip {name} {style.name}: no chat template", file=sys.stderr)
                continue
            model = LlamaCppModel(path, model_id=name, chat=style.chat)
            for task, cases, template in (
                ("rephrase", REPHRASE, style.rephrase),
                ("compress", COMPRESS, style.compress),
            ):
                row = Row(name, style.name, task)
                for case in cases:
                    out = model.complete(
                        template.format(lesson=case.lesson),
                        max_tokens=style.max_tokens,
                        stop=style.stop,
                    )
                    cleaned = clean(out.text)
                    row.checks.append(check(case, cleaned, style.examples))
                    row.raw_pass.append(check(case, out.text, style.examples)["pass"])
                    row.seconds.append(out.seconds)
                    row.nwords.append(words(cleaned))
                    if show:
                        mark = "PASS" if row.checks[-1]["pass"] else "fail"
                        print(
                            f"[{name} {style.name} {task} {case.domain}] {mark} "
                            f"({words(cleaned)}w): {cleaned!r}",
                            flush=True,
                        )
                rows.append(row)
                print(
                    f"done {name} {style.name} {task}: pass {row.rate('pass')}",
                    file=sys.stderr,
                    flush=True,
                )
    return rows, speeds


def table(rows: Sequence[Row], speeds: dict[str, dict[str, float]]) -> str:
    """The results as two plain-text tables."""
    out = ["model        load_s  prompt_tok/s  gen_tok/s  chat_template"]
    for name, s in speeds.items():
        out.append(
            f"{name:<12} {s['load_s']:>6.2f}  {s['pp_tok_s']:>12.0f}  {s['gen_tok_s']:>9.1f}"
            f"  {'yes' if s['has_template'] else 'no'}"
        )
    out.append("")
    keys = (
        "pass",
        "nonempty",
        "<=32w",
        "tools",
        "params",
        "no_echo",
        "no_invent",
        "no_copy",
        "complete",
    )
    head = f"{'model':<12} {'style':<18} {'task':<9} " + " ".join(f"{k:>9}" for k in keys)
    out.append(head + f" {'raw':>6} {'words':>6} {'s/call':>7}")
    for r in rows:
        cells = " ".join(f"{r.rate(k):>9}" for k in keys)
        out.append(
            f"{r.model:<12} {r.style:<18} {r.task:<9} {cells} "
            f"{sum(r.raw_pass):>3}/{len(r.raw_pass):<2} "
            f"{statistics.mean(r.nwords):>6.1f} {statistics.mean(r.seconds):>7.2f}"
        )
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="smollm2,gemma3-270m")
    parser.add_argument("--styles", default=",".join(s.name for s in STYLES))
    parser.add_argument("--show", action="store_true", help="print every output")
    args = parser.parse_args(argv)
    wanted = set(args.styles.split(","))
    styles = [s for s in STYLES if s.name in wanted]
    rows, speeds = run(args.models.split(","), styles, args.show)
    print(table(rows, speeds))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
