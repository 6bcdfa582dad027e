"""agy-sim: a fake ``agy`` speaking agy's protocol, for the tests and the demo.

A separate program (``agy-sim``, docs/simulator.md): connect-RPC server, engine, scenarios, fault
switches and a TUI in tmux. May import ``rpc`` only (the wire codec and the error tree): a
simulator built from the client's own code would agree with the client's mistakes.
"""
