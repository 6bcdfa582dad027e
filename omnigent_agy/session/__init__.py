"""The executor core: one agy session across a conversation's turns.

Owns the newest user message (``messages``), how a turn ends (``turns``) and ``AgySession``
(``agy_session``): launch or re-attach, bind the cascade, send, follow the reader, interrupt.
May import every layer below it; nothing in the core imports it but ``cli``.
"""
