"""The doctor: every check of a person's setup, and the pre-flight of a turn.

Owns the checks (``checks``: agy, tmux, Python and omnigent, the enable flag;
``instructions``: AGENTS.md; ``gemini_checks``: the private gemini dir agy runs with;
``quota_report``: the account's quota in words), and ``checkup``: the whole report and the
pre-flight the executor runs. May import ``rpc``, ``agy``, ``reading``, ``interactions``,
``config``, ``models`` and the plugin system (``hookspecs``, ``plugins``).
"""
