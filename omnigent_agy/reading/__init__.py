"""Reading agy's trajectory: wire steps become events, exactly once.

Owns the step accessors (``steps``, ``tool_steps``), the events (``events``), the pure mapper and
what it remembers (``mapper``, ``mapper_state``), the committed-step set and durable cursor
(``indexset``, ``cursor``), the sinks (``sink``) and the reader thread with its state
(``reader_state``, ``reader``). May import ``rpc`` only; the mapper itself does no I/O.
"""
