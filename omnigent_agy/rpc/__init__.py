"""The wire layer: talking to agy's connect-RPC language server.

Owns the error tree (``errors``), connect envelopes (``wire``), the async HTTP/2 client and its
retry policy (``connection``, ``channel``, ``unary_connection``, ``client``, ``retry``), where
failures become errors (``translate``), loopback only (``loopback``), handing freed memory back
(``heap``), finding the TLS port of the agy we started (``agy_log``, ``listeners``,
``discovery``) and following it when it moves (``endpoint``). May import nothing else from the
package: every other layer builds on it.
"""
