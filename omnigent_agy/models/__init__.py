"""agy's models: the catalog, what the plugin knows of each model, and the quota.

Owns agy's model catalog (``catalog``: GetAvailableModels → names a person can type), what
the plugin knows beyond it (``model_facts``: windows, prices, omnigent's ids), what ``agy
models`` printed (``agy_models``) and the account's plan and quota as agy reports them
(``quota``). May import ``rpc`` and ``reading``.
"""
