"""The probe: ``omnigent-agy probe`` checks a person's own agy against what the plugin relies on.

Owns the list of wire facts and fields the plugin reads (``facts``), the pure shape checks
(``shapes``), the probe's own agy in a scratch workspace (``scratch``), the transport checks
(``transport``), the checks that cost no turn (``methods``), the turns (``turns``,
``turn_checks``), what a turn can show about facts nobody confirmed yet (``unconfirmed``),
redaction and the recording (``redact``, ``recording``), and the report (``report``);
``run`` drives them. May import ``rpc``, ``agy``, ``reading``, ``interactions`` and
``onboarding``.
"""
