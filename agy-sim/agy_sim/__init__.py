"""agy-sim: a fake ``agy`` speaking agy's protocol, for the tests and the demo.

A separate program (``agy-sim``, docs/simulator.md): connect-RPC server, engine, scenarios, fault
switches and a TUI in tmux. May import nothing of the plugin (``omnigent_agy``), not even its
wire codec or error tree: a simulator built from the client's own code would agree with the
client's mistakes, so it frames envelopes with its own (``envelopes``) and raises its own errors
(``errors``); and a distribution that imports none of the plugin installs before it.
"""
