"""The canned queries of ``agentmem browse``: what people ask of a library, in SQL. Pure data.

Each reads only agentmem's tables and views, so it also runs in any SQLite
client (named parameters ``:session``, ``:group``, ``:lesson``). Columns named
``journal``, ``runs``, ``lesson``, ``session_id``, ``group_key`` and ``trajectory``
become links in the browser (:mod:`agentmem.browse.app`).
"""

from __future__ import annotations

from typing import Any

__all__ = ["CANNED_QUERIES"]

# An operation's ``before`` (a JSON list of rows) and ``after`` (one row) as readable text.
_BEFORE = (
    "(SELECT group_concat('[' || json_extract(b.value, '$.id') || '] ' "
    "|| json_extract(b.value, '$.text'), char(10)) FROM json_each(o.before) b)"
)
_AFTER = "json_extract(o.after, '$.text')"

LESSONS = """
SELECT
    e.domain, e.id, e.text, e.origin, e.session_id, e.group_key, e.operation,
    e.id AS journal, e.id AS runs, e.updated_at
FROM experience_sources e
WHERE e.status = 'live'
ORDER BY e.domain, e.id
"""

SESSION_JOURNAL = f"""
SELECT
    o.id, o.kind, o.status, o.origin, o.result_id AS lesson,
    {_BEFORE} AS before,
    {_AFTER} AS after,
    CASE WHEN o.status != 'applied' THEN o.text END AS proposed,
    o.reason, o.group_key, o.domain, o.target_ids, o.created_at
FROM operations o
WHERE o.session_id = CAST(:session AS INTEGER)
ORDER BY o.id
"""

GROUPS = """
SELECT
    group_key, count(*) AS runs, round(avg(reward), 4) AS mean_reward,
    sum(acceptance = 'pending') AS pending, sum(acceptance = 'rejected') AS rejected,
    sum(failed_steps > 0) AS runs_with_failures,
    (SELECT group_concat(sg.session_id) FROM session_groups sg
     WHERE sg.group_key = t.group_key) AS learned_in,
    min(task) AS task
FROM trajectory_summary t
GROUP BY group_key
ORDER BY max(created_at) DESC
"""

# A_i = (R_i - mu) / (sigma + 1e-8) with the sample standard deviation, as agentmem.rewards
# computes it; NULL while a run is pending and for a degenerate group (sigma < 1e-8).
GROUP_RUNS = """
WITH runs AS (
    SELECT t.*, count(*) OVER w AS size, avg(t.reward) OVER w AS mu,
        sum(t.reward IS NULL) OVER w AS pending_runs
    FROM trajectory_summary t
    WHERE t.group_key = :group
    WINDOW w AS (PARTITION BY t.group_key)
), stats AS (
    SELECT *, CASE WHEN size >= 2 AND pending_runs = 0 THEN
        sqrt(sum((reward - mu) * (reward - mu)) OVER (PARTITION BY group_key) / (size - 1))
    END AS sigma
    FROM runs
)
SELECT
    id AS trajectory, round(reward, 4) AS reward,
    CASE WHEN sigma >= 1e-8 THEN round((reward - mu) / (sigma + 1e-8), 4) END AS advantage,
    round(success_rate, 4) AS success_rate, acceptance, step_count AS steps, failed_steps,
    condition, source,
    (SELECT group_concat(sg.session_id) FROM session_groups sg, json_each(sg.trajectory_ids) j
     WHERE sg.group_key = stats.group_key AND j.value = stats.id) AS learned_in,
    round(mu, 4) AS group_mean, round(sigma, 4) AS group_std, created_at, task
FROM stats
ORDER BY id
"""

FAILING_TOOLS = """
WITH totals AS (
    SELECT tool, min(domain) AS domain, count(*) AS calls, sum(success = 0) AS failures
    FROM steps GROUP BY tool
), errors AS (
    SELECT tool, substr(output, 1, 200) AS error, count(*) AS times
    FROM steps WHERE success = 0
    GROUP BY tool, error
), ranked AS (
    SELECT *, row_number() OVER (PARTITION BY tool ORDER BY times DESC, error) AS rank
    FROM errors
)
SELECT
    t.tool, t.domain, t.failures, t.calls, round(1.0 * t.failures / t.calls, 3) AS failure_rate,
    r.error AS typical_error, r.times AS typical_error_times
FROM totals t JOIN ranked r ON r.tool = t.tool AND r.rank = 1
ORDER BY t.failures DESC, failure_rate DESC, t.tool
LIMIT 100
"""

LESSON_JOURNAL = f"""
SELECT
    o.id, o.session_id, s.kind AS session_kind, s.status AS session_status,
    o.kind, o.status, o.origin, o.group_key,
    {_BEFORE} AS before,
    {_AFTER} AS after,
    CASE WHEN o.status != 'applied' THEN o.text END AS proposed,
    o.reason, o.target_ids, o.result_id, o.created_at
FROM operations o JOIN sessions s ON s.id = o.session_id
WHERE o.result_id = CAST(:lesson AS INTEGER)
    OR EXISTS (SELECT 1 FROM json_each(o.target_ids) j WHERE j.value = CAST(:lesson AS INTEGER))
ORDER BY o.id
"""

# The groups an applied learning operation came from: its own, plus those Stage 3 merged
# into it (its reason then reads "... generalized from N lessons of groups a, b, c"); for
# the lesson and every lesson an applied MODIFY or MERGE folded into it (its lineage: a
# lesson merged in a later session keeps the runs it was first learned from).
LESSON_RUNS = """
WITH RECURSIVE lineage(id) AS (
    SELECT CAST(:lesson AS INTEGER)
    UNION
    SELECT CAST(x.value AS INTEGER)
    FROM lineage l
    JOIN operations m ON m.result_id = l.id AND m.status = 'applied'
        AND m.kind IN ('MODIFY', 'MERGE')
    JOIN sessions ms ON ms.id = m.session_id AND ms.status = 'applied'
    JOIN json_each(m.target_ids) x
)
SELECT
    j.value AS trajectory, sg.session_id, o.id AS operation, o.kind AS operation_kind,
    sg.group_key,
    (SELECT json_extract(x.value, '$.sign') FROM json_each(sg.summaries) x
     WHERE json_extract(x.value, '$.trajectory_id') = j.value) AS sign,
    t.reward, t.acceptance, t.step_count AS steps, t.failed_steps, t.task
FROM operations o
JOIN sessions s ON s.id = o.session_id
JOIN session_groups sg ON sg.session_id = o.session_id AND (
    sg.group_key = o.group_key
    OR (instr(o.reason, ' of groups ') > 0 AND (
        instr(', ' || substr(o.reason, instr(o.reason, ' of groups ') + 11) || ';',
              ', ' || sg.group_key || ',') > 0
        OR instr(', ' || substr(o.reason, instr(o.reason, ' of groups ') + 11) || ';',
                 ', ' || sg.group_key || ';') > 0))
)
JOIN json_each(sg.trajectory_ids) j
LEFT JOIN trajectory_summary t ON t.id = j.value
WHERE o.result_id IN (SELECT id FROM lineage)
    AND o.status = 'applied' AND o.kind IN ('ADD', 'MODIFY', 'MERGE')
    AND s.status = 'applied' AND s.kind = 'learn'
ORDER BY sg.session_id, sg.group_key, j.value
"""

# Per lesson, of the judged runs it was served to (and held out from) that met its situation:
# how many repeated its mistake (agentmem.learning.outcomes; agentmem effect compares them).
REPEATED_MISTAKES = """
SELECT
    s.experience_id AS lesson, e.status, e.text,
    sum(s.held = 0 AND s.situation = 1) AS served_situations,
    sum(s.held = 0 AND s.repeated = 1) AS served_repeated,
    sum(s.held = 0 AND s.followed = 1) AS served_followed,
    round(1.0 * sum(s.held = 0 AND s.repeated = 1)
        / nullif(sum(s.held = 0 AND s.situation = 1), 0), 3) AS repeated_rate,
    sum(s.held = 1 AND s.situation = 1) AS held_situations,
    sum(s.held = 1 AND s.repeated = 1) AS held_repeated,
    max(s.at) AS last_served, s.experience_id AS journal
FROM served s JOIN experiences e ON e.id = s.experience_id
WHERE s.judged_session IS NOT NULL
GROUP BY s.experience_id
HAVING served_repeated > 0
ORDER BY repeated_rate DESC, served_repeated DESC, lesson
"""

#: name -> Datasette canned query (``sql``, ``title``, ``description``).
CANNED_QUERIES: dict[str, dict[str, Any]] = {
    "lessons": {
        "sql": LESSONS,
        "title": "Live lessons by domain, with where each came from",
        "description": (
            "Each live lesson with the session, task group and origin (model, data, fallback, "
            "user) of the operation its text came from; journal lists every operation on it, "
            "runs the trajectories it was learned from."
        ),
    },
    "session_journal": {
        "sql": SESSION_JOURNAL,
        "title": "What a session did",
        "description": (
            "Every operation of one session, applied or rejected, with the lesson before and "
            "after it and the reason (agentmem journal --session N)."
        ),
    },
    "groups": {
        "sql": GROUPS,
        "title": "Task groups",
        "description": (
            "Each task group: its runs, mean composite reward, pending and rejected runs, and "
            "the learning sessions that used it."
        ),
    },
    "group_runs": {
        "sql": GROUP_RUNS,
        "title": "The runs of a task group, with rewards and advantages",
        "description": (
            "The composite reward of each run and its group-relative advantage "
            "A = (R - mean) / (sample std + 1e-8); no advantage while a run is pending or when "
            "every run has the same reward (agentmem groups). learned_in: the sessions that "
            "learned from the run."
        ),
    },
    "failing_tools": {
        "sql": FAILING_TOOLS,
        "title": "Tools that fail most, with their typical error",
        "description": (
            "Failed calls per tool and the most frequent error output (its first 200 characters)."
        ),
    },
    "lesson_journal": {
        "sql": LESSON_JOURNAL,
        "title": "The journal of a lesson",
        "description": (
            "Every operation that created, changed, merged or deleted one lesson, in order, with "
            "its session and the text before and after."
        ),
    },
    "repeated_mistakes": {
        "sql": REPEATED_MISTAKES,
        "title": "Lessons whose mistake keeps happening",
        "description": (
            "The lessons whose mistake happened anyway in runs they were served to: of the runs "
            "that met the lesson's situation, how many followed it and how many repeated the "
            "mistake, beside the runs the holdout withheld it from (agentmem effect). A lesson "
            "repeated in half of 5 or more is retired by the next learning session."
        ),
    },
    "lesson_runs": {
        "sql": LESSON_RUNS,
        "title": "The trajectories a lesson was learned from",
        "description": (
            "For each applied learning operation that wrote the lesson, or a lesson a later "
            "MODIFY or MERGE folded into it: the runs of its task group (and of the groups "
            "Stage 3 generalized into it) that the session used, with the sign of each run's "
            "advantage in that session."
        ),
    },
}
