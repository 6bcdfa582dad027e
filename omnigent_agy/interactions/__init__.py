"""Interactions: agy's WAITING steps, the operator's policy and the person.

Owns the permission policy and its pluggy hooks (``policy``, ``hooks``), what the bridge asks its
host (``prompts``), the pure mapping from a gate to a card and an answer (``gates``) and the bridge
that delivers answers to the freshest WAITING step (``bridge``). May import ``rpc`` and
``reading``.
"""
