"""Which of the person's MCP servers one agent's agy gets (``harness.agy-cli.mcp_servers``,
an agent's ``mcp_servers``): all, an allow-list or a deny-list, parsed and described."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["McpSelection"]


@dataclass(frozen=True, slots=True)
class McpSelection:
    """Which of the person's MCP servers one agent's agy gets: all (the default), only an
    allow-list, or all but a deny-list."""

    allow: tuple[str, ...] | None = None
    deny: tuple[str, ...] = ()

    def admits(self, name: str) -> bool:
        if name in self.deny:
            return False
        return self.allow is None or name in self.allow

    @classmethod
    def parse(cls, raw: object, *, key: str) -> McpSelection:
        """``{allow: [names]}`` or ``{deny: [names]}``; ValueError naming ``key`` otherwise."""
        if raw is None:
            return cls()
        if not isinstance(raw, Mapping):
            # ValueError, not TypeError: every caller reports it as a configuration error.
            raise ValueError(f"{key} must be a mapping with 'allow' or 'deny' (a list of names)")  # noqa: TRY004
        unknown = sorted(str(name) for name in raw if name not in ("allow", "deny"))
        if unknown:
            raise ValueError(f"{key}.{unknown[0]} is not a setting; use 'allow' or 'deny'")
        if "allow" in raw and "deny" in raw:
            raise ValueError(f"{key} takes 'allow' or 'deny', not both")
        lists: dict[str, tuple[str, ...]] = {}
        for which in ("allow", "deny"):
            names = raw.get(which)
            if which not in raw:
                continue
            if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
                raise ValueError(f"{key}.{which} must be a list of MCP server names")
            lists[which] = tuple(names)
        if "allow" in lists:
            return cls(allow=lists["allow"])
        return cls(deny=lists.get("deny", ()))

    def describe(self) -> str:
        if self.allow is not None:
            return f"only {', '.join(self.allow) or 'none'}"
        return f"all but {', '.join(self.deny)}" if self.deny else "all"
