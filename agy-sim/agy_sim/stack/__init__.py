"""omnigent around omnigent-agy on loopback, for the demo, the e2e tests and the benchmarks.

``local_stack`` runs omnigent's real server and host with the plugin enabled and its agent
registered (``processes`` starts, stops and sweeps up after them); ``rest`` is omnigent's REST
API as its web UI calls it; ``harness_server`` serves one conversation's harness app and talks
to it as omnigent's runner does; ``demo`` is ``omnigent-agy demo``. Tooling, not the plugin:
installed with agy-sim (``omnigent-agy[demo]``). May import nothing of the plugin nor of
agy-sim's simulator: it runs agy-sim, omnigent and omnigent-agy as commands (installed beside
it), as a person does.
"""
