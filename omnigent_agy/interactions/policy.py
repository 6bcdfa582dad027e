"""Permission policy: modes and allow/deny rules that answer agy's permission gates.

When agy parks a step on a permission interaction (docs/wire.md §6), omnigent's own policy
evaluator is consulted first by the interaction bridge; what it leaves open comes here.
``decide`` answers with a ``PermissionDecision`` or ``None`` (ask the person).

Precedence, first match wins:

1. **deny rules** — an operator's deny always wins, over plugins, allow rules and modes;
2. **the ``agy_permission_decision`` hook** — an installed plugin (first result wins);
3. **allow rules** — a chained command is allowed only if *every* part is allowed;
4. **the mode** — ``bypass`` allows everything, ``accept-edits`` allows file edits,
   ``plan`` denies edits and commands, ``ask`` (the default) decides nothing.

Rules use agy's notation ``kind(pattern)``; the grammar is in docs/configuration.md.
"""

from __future__ import annotations

import enum
import logging
import os.path
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from omnigent_agy.errors import InvalidRuleError
from omnigent_agy.interactions.commandline import split_command

if TYPE_CHECKING:
    import pluggy

_logger = logging.getLogger(__name__)

# Longest command text written to the log: enough to recognise it, short enough that a
# pasted secret in a long command line is not reproduced whole.
_LOG_PREVIEW = 160


class PermissionMode(enum.StrEnum):
    ASK = "ask"
    ACCEPT_EDITS = "accept-edits"
    PLAN = "plan"
    BYPASS = "bypass"


class RequestKind(enum.StrEnum):
    COMMAND = "command"
    READ = "read"
    EDIT = "edit"
    MCP = "mcp"
    OTHER = "other"


class Verdict(enum.StrEnum):
    ALLOW = "allow"
    DENY = "deny"


class Scope(enum.StrEnum):
    """How long an answer holds; maps to agy's ``PERMISSION_SCOPE_*`` (docs/wire.md §6)."""

    ONCE = "once"
    CONVERSATION = "conversation"


# Spellings accepted for each rule kind: agy's own tool names and the short forms.
_RULE_KINDS: dict[str, RequestKind] = {
    "command": RequestKind.COMMAND,
    "run_command": RequestKind.COMMAND,
    "read": RequestKind.READ,
    "read_file": RequestKind.READ,
    "edit": RequestKind.EDIT,
    "write": RequestKind.EDIT,
    "edit_file": RequestKind.EDIT,
    "write_file": RequestKind.EDIT,
    "mcp": RequestKind.MCP,
}
_RULE_RE = re.compile(r"^\s*([A-Za-z_]+)\((.*)\)\s*$", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Rule:
    """One parsed rule. ``prefix`` is set for ``cmd:*`` / ``cmd *`` command rules."""

    text: str
    kind: RequestKind
    pattern: str
    prefix: bool = False

    def __str__(self) -> str:
        return self.text


def parse_rule(text: str) -> Rule:
    """Parse ``kind(pattern)``; raise ``InvalidRuleError`` naming the rule and the fix."""
    match = _RULE_RE.match(text) if isinstance(text, str) else None
    if match is None:
        raise InvalidRuleError(
            f"permission rule {text!r} is not of the form kind(pattern); write e.g. "
            "'command(git status)', 'command(npm test:*)' or 'read(/home/me/project/**)'"
        )
    kind_name, pattern = match.group(1).lower(), " ".join(match.group(2).split())
    kind = _RULE_KINDS.get(kind_name)
    if kind is None:
        kinds = ", ".join(sorted({"command", "read", "edit", "write", "mcp"}))
        raise InvalidRuleError(f"permission rule {text!r}: unknown kind {kind_name!r}; use {kinds}")
    if not pattern:
        raise InvalidRuleError(f"permission rule {text!r} has an empty pattern; use '*' for any")
    if kind is not RequestKind.COMMAND:
        return Rule(text.strip(), kind, pattern)
    if pattern == "*":
        return Rule(text.strip(), kind, "", prefix=True)
    prefix = pattern.removesuffix(":*") if pattern.endswith(":*") else None
    if prefix is None and pattern.endswith(" *"):
        prefix = pattern[:-2]
    body = prefix if prefix is not None else pattern
    if "*" in body or not body.strip():
        raise InvalidRuleError(
            f"permission rule {text!r}: a command pattern is exact, or a prefix ending in "
            f"':*' or ' *' (e.g. 'command(git log:*)'); '*' may not appear elsewhere"
        )
    return Rule(text.strip(), kind, body.strip(), prefix=prefix is not None)


def parse_rules(texts: Iterable[str]) -> tuple[Rule, ...]:
    return tuple(parse_rule(text) for text in texts)


@dataclass(frozen=True, slots=True)
class PermissionPolicy:
    """The operator's policy: a mode plus allow and deny rules (already parsed)."""

    mode: PermissionMode = PermissionMode.ASK
    allow: tuple[Rule, ...] = ()
    deny: tuple[Rule, ...] = ()


@dataclass(frozen=True, slots=True)
class PermissionRequest:
    """One permission gate agy opened, in host-neutral terms.

    ``mcp_tool`` is ``"server/tool"`` for MCP requests; ``raw`` is agy's
    ``requestedInteraction.permission`` payload, kept for plugins and logs.
    """

    kind: RequestKind
    command_line: str | None = None
    cwd: str | None = None
    paths: tuple[str, ...] = ()
    action_description: str = ""
    mcp_tool: str | None = None
    raw: Mapping[str, object] = field(default_factory=dict, compare=False)

    def summary(self) -> str:
        subject = self.command_line or ", ".join(self.paths) or self.mcp_tool or ""
        subject = subject or self.action_description
        if len(subject) > _LOG_PREVIEW:
            subject = subject[: _LOG_PREVIEW - 1] + "…"
        return f"{self.kind.value}: {subject}"


@dataclass(frozen=True, slots=True)
class PermissionDecision:
    """An automatic answer; ``source`` and ``rule`` say what decided it (for the log)."""

    verdict: Verdict
    source: str
    rule: str | None = None
    scope: Scope = Scope.ONCE
    reason: str = ""

    @property
    def allowed(self) -> bool:
        return self.verdict is Verdict.ALLOW


# --- commands ------------------------------------------------------------------------


def _command_matches(rule: Rule, part: str) -> bool:
    if not rule.prefix:
        return part == rule.pattern
    return not rule.pattern or part == rule.pattern or part.startswith(rule.pattern + " ")


# --- paths ---------------------------------------------------------------------------


def _glob_regex(pattern: str) -> re.Pattern[str]:
    """``**`` crosses directories, ``*`` and ``?`` stay within one path segment."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out))


def _absolute(path: str, cwd: str | None) -> str:
    expanded = os.path.expanduser(path)
    if not os.path.isabs(expanded) and cwd:
        expanded = os.path.join(cwd, expanded)
    # Lexical normalisation so that 'src/../../etc/passwd' cannot pass for 'src/**'.
    return os.path.normpath(expanded)


def _path_matches(rule: Rule, path: str, cwd: str | None) -> bool:
    if rule.pattern == "*":
        return True
    pattern = _absolute(rule.pattern, cwd)
    if rule.pattern.endswith("/**"):
        pattern += "/**"
    return _glob_regex(pattern).fullmatch(_absolute(path, cwd)) is not None


def _mcp_matches(rule: Rule, tool: str) -> bool:
    server = tool.split("/", 1)[0]
    target = tool if "/" in rule.pattern else server
    return _glob_regex(rule.pattern).fullmatch(target) is not None


# --- decision ------------------------------------------------------------------------


def _matches(rule: Rule, request: PermissionRequest, subject: str) -> bool:
    if rule.kind is not request.kind:
        return False
    if rule.kind is RequestKind.COMMAND:
        return _command_matches(rule, subject)
    if rule.kind is RequestKind.MCP:
        return _mcp_matches(rule, subject)
    return _path_matches(rule, subject, request.cwd)


def _subjects(request: PermissionRequest) -> tuple[tuple[str, bool], ...]:
    """What rules are matched against: ``(text, may_be_auto_allowed)`` pairs."""
    if request.kind is RequestKind.COMMAND:
        parts = split_command(request.command_line or "")
        return tuple((part.text, not part.opaque) for part in parts)
    if request.kind is RequestKind.MCP:
        return ((request.mcp_tool, True),) if request.mcp_tool else ()
    return tuple((path, True) for path in request.paths)


def _deny(request: PermissionRequest, policy: PermissionPolicy) -> PermissionDecision | None:
    """Any part (or path) matching any deny rule denies the whole request."""
    for subject, _ in _subjects(request):
        for rule in policy.deny:
            if _matches(rule, request, subject):
                return PermissionDecision(Verdict.DENY, "deny rule", rule.text)
    return None


def _allow(request: PermissionRequest, policy: PermissionPolicy) -> PermissionDecision | None:
    """Allow only when every part (or path) is allowable and matches an allow rule."""
    subjects = _subjects(request)
    if not subjects or not all(allowable for _, allowable in subjects):
        return None
    decided_by: list[str] = []
    for subject, _ in subjects:
        hit = next((rule for rule in policy.allow if _matches(rule, request, subject)), None)
        if hit is None:
            return None
        if hit.text not in decided_by:
            decided_by.append(hit.text)
    return PermissionDecision(Verdict.ALLOW, "allow rule", ", ".join(decided_by))


def _by_mode(request: PermissionRequest, mode: PermissionMode) -> PermissionDecision | None:
    if mode is PermissionMode.BYPASS:
        return PermissionDecision(Verdict.ALLOW, "mode", mode.value)
    if mode is PermissionMode.ACCEPT_EDITS and request.kind is RequestKind.EDIT:
        return PermissionDecision(Verdict.ALLOW, "mode", mode.value)
    if mode is PermissionMode.PLAN and request.kind in (RequestKind.EDIT, RequestKind.COMMAND):
        return PermissionDecision(
            Verdict.DENY,
            "mode",
            mode.value,
            reason="plan mode does not change files or run commands",
        )
    return None


def decide(
    request: PermissionRequest,
    policy: PermissionPolicy,
    plugin_manager: pluggy.PluginManager | None = None,
) -> PermissionDecision | None:
    """Decide a permission automatically, or return ``None`` to ask the person."""
    decision = _deny(request, policy)
    if decision is None and plugin_manager is not None:
        hooked = plugin_manager.hook.agy_permission_decision(request=request)
        if hooked is not None:
            if not isinstance(hooked, PermissionDecision):
                raise TypeError(
                    f"agy_permission_decision returned {type(hooked).__name__}, "
                    "expected PermissionDecision or None"
                )
            decision = hooked
    if decision is None:
        decision = _allow(request, policy)
    if decision is None:
        decision = _by_mode(request, policy.mode)
    if decision is not None:
        _logger.info(
            "permission %s by %s%s: %s",
            decision.verdict.value,
            decision.source,
            f" {decision.rule!r}" if decision.rule else "",
            request.summary(),
        )
    return decision
