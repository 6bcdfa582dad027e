"""Configuration: what the operator and the person set, and which agy runs.

Owns the ``harness.agy-cli`` block of omnigent's config file and its variables
(``settings``), writing that file (``config_file``), which agy executable runs
(``executable``), the agy versions the plugin is tested with (``agy_versions``) and the
shipped agent folder written out for this install (``agent_folder``). May import ``rpc``,
``agy`` and ``interactions`` (the policy's rules are part of the configuration).
"""
