"""Practice: the paper's own loop (G rollouts per task under a verifiable reward) on the
user's tasks and agent, with the lessons' effect measured on held-out tasks (issue 32).

:mod:`.types` holds the values every part shares: a :class:`~.types.Task`, one
:class:`~.types.Outcome` of running an agent on it, and the :class:`~.types.Agent`
protocol that a CLI client or a model server driving BFCL's simulators implements.
"""
