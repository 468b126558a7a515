"""Storage: one module per table; every other module calls the owner.

========================  ====================================================
module                    tables it owns (writes, and reads for others)
========================  ====================================================
:mod:`.settings`          ``settings``
:mod:`.tool_domains`      ``tool_domains``
:mod:`.trajectories`      ``trajectories``, ``steps``, ``feedback``
:mod:`.pruned`            ``pruned_trajectories``
:mod:`.experiences`       ``experiences``
:mod:`.journal`           ``sessions``, ``operations``, ``session_groups``
                          (and applies operations to ``experiences`` and both
                          indexes in one transaction)
:mod:`.vector_index`      ``experience_vectors``, ``experience_vectors_items``,
                          ``experience_vectors_blocks``
:mod:`.keyword_index`     ``experience_fts``
:mod:`.tool_usage`        ``tool_usage``
:mod:`.task_vectors`      ``task_vectors``
:mod:`.scopes`            ``experience_scopes``
:mod:`.imports`           ``imported_turns``, ``imported_files``
:mod:`.outbox`            ``team_outbox``
:mod:`.retention`         none: ``prune`` marks and deletes runs through the owners
========================  ====================================================

(``team_claims`` lives only on a team's primary and is owned by
:mod:`agentmem.team.claims`; :mod:`agentmem.migrations` creates every table.)
Writers run inside the caller's write transaction (:func:`agentmem.db.write`);
policy (rewards, grouping, scope rules) stays out of these modules. Importing this
package imports nothing: the prompt-hook path loads only the lean owners it reads.
"""
