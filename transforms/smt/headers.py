"""Header transforms: ``insert_header``, ``drop_headers``, ``header_from``."""

from __future__ import annotations

from typing import Any

from cdc_smt.transforms.errors import ConfigError, TransformError
from cdc_smt.transforms.model import ChangeEvent
from cdc_smt.transforms.options import Option, Options
from cdc_smt.transforms.smt._template import Template, check_template
from cdc_smt.transforms.smt._template import text as header_text
from cdc_smt.transforms.smt.base import Result, Transform, check_names, current_headers
from cdc_smt.transforms.smt.replace_field import ReplaceField


class InsertHeader(Transform):
    """Add a header whose value is a literal or a template over the event
    (`{database}.{table}`, `{op}`; see `route`). An event for which a template
    field is null gets no header."""

    name = "insert_header"
    known_as = "Kafka Connect InsertHeader"
    scope = "all"
    options = (
        Option("header", str, doc="Header name."),
        Option("value", str, doc="Value (UTF-8), a literal or a template such as `{database}`.", check=check_template),
        Option("replace", bool, False, "Remove existing headers of that name first (default: add another)."),
    )

    def configure(self, opts: Options) -> None:
        if not opts.header:
            raise ConfigError("must not be empty", f"{self.path}.header")
        self._header = opts.header
        self._template = Template(opts.value)
        self._static = self._template.static_text().encode("utf-8") if self._template.static else None
        self._replace = opts.replace

    def adds_columns(self) -> tuple[str, ...]:
        return ()

    def apply(self, event: ChangeEvent) -> Result:
        value = self._static
        if value is None:
            text = self._template.render(event)
            if text is None:
                return event
            value = text.encode("utf-8")
        headers = current_headers(event)
        if self._replace:
            headers = [h for h in headers if h[0] != self._header]
        else:
            headers = list(headers)
        headers.append((self._header, value))
        event.headers = headers
        return event


class DropHeaders(Transform):
    """Remove headers by name."""

    name = "drop_headers"
    known_as = "Kafka Connect DropHeaders"
    scope = "all"
    options = (Option("headers", list, doc="Header names to remove.", check=check_names),)

    def configure(self, opts: Options) -> None:
        if not opts.headers:
            raise ConfigError("list at least one header", f"{self.path}.headers")
        self._names = frozenset(opts.headers)

    def adds_columns(self) -> tuple[str, ...]:
        return ()

    def apply(self, event: ChangeEvent) -> Result:
        headers = current_headers(event)
        names = self._names
        event.headers = [h for h in headers if h[0] not in names]
        return event


class HeaderFrom(Transform):
    """Copy (or move) row columns into headers: `fields[i]` becomes header
    `headers[i]`, its value as UTF-8 text (the after-image, else the
    before-image). Null or missing values add no header."""

    name = "header_from"
    known_as = "Kafka Connect HeaderFrom"
    names_columns = True
    options = (
        Option("fields", list, doc="Columns to read.", check=check_names),
        Option("headers", list, doc="Header names, one per column.", check=check_names),
        Option("operation", str, "copy", "`move` also removes the columns from the row.", choices=("copy", "move")),
    )

    def configure(self, opts: Options) -> None:
        if not opts.fields:
            raise ConfigError("list at least one column", f"{self.path}.fields")
        if len(opts.fields) != len(opts.headers):
            raise ConfigError(
                f"needs one header per field ({len(opts.fields)} fields, {len(opts.headers)} headers)",
                f"{self.path}.headers",
            )
        self._pairs = tuple(zip(opts.fields, opts.headers, strict=True))
        self.columns = tuple(opts.fields)
        self._remover = (
            ReplaceField({"exclude": list(opts.fields), "on_missing": "ignore"}, path=self.path)
            if opts.operation == "move"
            else None
        )

    def adds_columns(self) -> tuple[str, ...]:
        return ()

    def apply(self, event: ChangeEvent) -> Result:
        event.typed()
        row = event.row
        if row is None:
            return event
        headers = list(current_headers(event))
        for field, header in self._pairs:
            value: Any = row.get(field)
            if value is None:
                continue
            text = header_text(value)
            if text is None:  # pragma: no cover - header_text only returns None for None
                raise TransformError(f"cannot render column {field!r} as a header")
            headers.append((header, text.encode("utf-8")))
        event.headers = headers
        if self._remover is not None:
            self._remover.apply(event)  # pins the key first if a key column moves
        return event
