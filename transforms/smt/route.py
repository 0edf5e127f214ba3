"""``route``: set the destination topic from a template, a regex, a timestamp or the row's content."""

from __future__ import annotations

import re
from typing import Any

from cdc_smt.transforms.errors import ConfigError
from cdc_smt.transforms.expr import Expression, compile_expr
from cdc_smt.transforms.model import ChangeEvent
from cdc_smt.transforms.options import Option, Options
from cdc_smt.transforms.smt._template import FIELDS, Template, check_template
from cdc_smt.transforms.smt.base import Result, Transform, check_regex, current_topic

_INVALID_TOPIC_CHARS = re.compile(r"[^a-zA-Z0-9._-]")
_JAVA_GROUP = re.compile(r"\$(?:(\d+)|\{(\w+)\})")


def java_replacement(replacement: str) -> str:
    """Accept Java's ``$1`` / ``${name}`` (as in Kafka Connect configs) besides Python's ``\\1``."""
    return _JAVA_GROUP.sub(lambda m: f"\\g<{m.group(1) or m.group(2)}>", replacement)


def sanitize_topic(topic: str) -> str:
    """Kafka topic names allow ``[a-zA-Z0-9._-]`` up to 249 characters; others become ``_``."""
    return _INVALID_TOPIC_CHARS.sub("_", topic)[:249]


class Route(Transform):
    """Set each event's destination topic.

    In order: the first of `routes` whose `when` expression is true gives the
    topic template, else `topic`; then `regex`/`replacement` rewrite the
    result (or the current topic when no template applies). An event for which
    a template field is null (a heartbeat has no table) keeps its topic.
    Template fields: {fields}.
    """

    name = "route"
    known_as = "Kafka Connect RegexRouter, TimestampRouter; Debezium ContentBasedRouter"
    scope = "all"
    names_columns = True
    options = (
        Option(
            "topic",
            str,
            None,
            "Topic template, e.g. `cdc.{database}.{table}` or `{topic}-{timestamp:%Y%m%d}`.",
            check=check_template,
        ),
        Option("regex", str, None, "Regex the whole topic must match to be rewritten.", check=check_regex),
        Option(
            "replacement",
            str,
            None,
            "Replacement for `regex`; groups as `$1` (Kafka Connect) or `\\1`.",
        ),
        Option(
            "routes",
            list,
            [],
            "Content-based routes, first match wins: a list of `{when: EXPR, topic: TEMPLATE}`.",
        ),
        Option(
            "sanitize",
            bool,
            True,
            "Replace characters Kafka does not allow in topic names with `_` (and cut at 249).",
        ),
    )

    __doc__ = (__doc__ or "").replace("{fields}", ", ".join(f"`{f}`" for f in FIELDS))

    def configure(self, opts: Options) -> None:
        self._topic = Template(opts.topic) if opts.topic is not None else None
        if (opts.regex is None) != (opts.replacement is None):
            missing = "replacement" if opts.replacement is None else "regex"
            raise ConfigError(f"regex and replacement go together; {missing} is missing", f"{self.path}.{missing}")
        self._regex = re.compile(opts.regex) if opts.regex is not None else None
        self._replacement = java_replacement(opts.replacement) if opts.replacement is not None else None
        self._routes = [self._route(i, r) for i, r in enumerate(opts.routes)]
        if self._topic is None and self._regex is None and not self._routes:
            raise ConfigError("route needs topic, regex/replacement or routes", self.path or None)
        self._sanitize = opts.sanitize
        self._final: dict[str, str] = {}
        named = [] if self._topic is None else list(self._topic.columns)
        for when, template in self._routes:
            named.extend((*when.columns, *template.columns))
        self.columns = self.expression_columns = tuple(dict.fromkeys(named))

    def adds_columns(self) -> tuple[str, ...]:
        return ()

    def _route(self, i: int, spec: Any) -> tuple[Expression, Template]:
        path = f"{self.path}.routes[{i}]"
        if not isinstance(spec, dict):
            raise ConfigError("expected a mapping {when: EXPR, topic: TEMPLATE}", path)
        unknown = sorted(set(spec) - {"when", "topic"})
        if unknown:
            raise ConfigError(f"unknown key {unknown[0]!r} (known: topic, when)", f"{path}.{unknown[0]}")
        for key in ("when", "topic"):
            if not isinstance(spec.get(key), str):
                raise ConfigError("missing required string", f"{path}.{key}")
        try:
            template = Template(spec["topic"])
        except ValueError as exc:
            raise ConfigError(str(exc), f"{path}.topic") from None
        return compile_expr(spec["when"], path=f"{path}.when"), template

    def _finish(self, topic: str) -> str:
        """Regex rewrite and sanitising, cached per rendered topic."""
        final = self._final.get(topic)
        if final is None:
            final = topic
            m = self._regex.fullmatch(topic) if self._regex is not None else None
            if m is not None:
                assert self._replacement is not None  # configure() requires regex and replacement together
                final = m.expand(self._replacement)
            if self._sanitize:
                final = sanitize_topic(final)
            if len(self._final) > 65536:
                self._final.clear()
            self._final[topic] = final
        return final

    def apply(self, event: ChangeEvent) -> Result:
        template = self._topic
        for when, t in self._routes:
            if when.test(event):
                template = t
                break
        if template is not None:
            topic = template.render(event)
            if topic is None:
                return event
        elif self._regex is not None:
            topic = current_topic(event)
            if topic is None or self._regex.fullmatch(topic) is None:
                return event  # RegexRouter leaves topics it does not match alone
        else:
            return event
        event.topic = self._finish(topic)
        return event
