"""``kubectl hoststate``: a kubectl plugin that reads what the controller wrote and says it
in words, for a person at a terminal.

- ``history NAME``: a machine's timeline, chapter by chapter (registration, provisioning,
  each servicing and each node update), from its HostState's ``status.chapters`` and
  ``status.history``;
- ``why NAME``: what the machine waits on and since when, the conditions that are not
  OK, and how long its step usually takes on machines like it (``status.estimate``);
- ``eta POOL``: a NodePool's rollout, its expected end and whether it is on schedule,
  with the pool's machines still updating.

It only reads (``get`` and ``list`` on HostStates, NodePools and Nodes) and prints plain
text. Each subcommand is a module: a read of the API objects, then a pure rendering of
them (dicts in, text out) that the unit tests call without a cluster. Installed as the
``kubectl-hoststate`` script of the ``hoststate`` package (kubectl finds it on PATH);
``plugins/krew/hoststate.yaml`` is its krew manifest (docs/plugin.md).
"""
