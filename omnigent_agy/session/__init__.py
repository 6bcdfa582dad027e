"""The executor core: one agy session across a conversation's turns.

Owns the newest user message (``messages``), a turn and what it holds until it ends
(``turn``), what a turn yields (``turns``), where the conversation lives (``binding``: launch
or re-attach, bind the cascade, start the reader) and ``AgySession`` (``agy_session``): send,
follow the reader, answer gates, interrupt, steer.
May import every layer below it; nothing in the core imports it but ``cli``.
"""
