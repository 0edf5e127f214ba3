"""A small, safe expression language for conditions over change events.

Conditions (`filter`'s `condition`, `route`'s `routes[].when`, the `condition`
predicate) are written in a small expression language. An expression is
tokenised and parsed by hand (recursive descent) into a tree of Python closures
once, when the chain loads; nothing is handed to `eval`, and only the names
and functions below exist, so a config file cannot run code.

#### Grammar

```
expr     := or
or       := and ("or" and)*
and      := not ("and" not)*
not      := "not" not | test
test     := sum [ CMP sum
                | "is" ["not"] "null"
                | ["not"] "in" "(" expr ("," expr)* ")"
                | ["not"] "like" STRING
                | ["not"] "between" sum "and" sum ]
CMP      := "==" | "=" | "!=" | "<>" | "<" | "<=" | ">" | ">="
sum      := product (("+" | "-") product)*
product  := unary (("*" | "/" | "%") unary)*
unary    := "-" unary | atom
atom     := NUMBER | STRING | "null" | "true" | "false"
          | NAME ("." FIELD)*
          | FUNCTION "(" [expr ("," expr)*] ")"
          | "(" expr ")"
FIELD    := NAME | `back-quoted name`
```

Keywords (`and or not in is null true false like between`) are
case-insensitive; names and fields are case-sensitive. Strings take single or
double quotes with backslash escapes (`'it\\'s'`). Numbers are exact (`100`,
`12.50`, `1e3`). `like` patterns use `%` (any run) and `_` (one character).

#### Names

| name | value |
|---|---|
| `op` | `insert`, `update`, `delete`, `read`, `truncate`, `ddl`, `heartbeat`, `watermark`, `begin`, `commit` |
| `database`, `table`, `schema` | where the change happened (`schema`: Postgres/Oracle only) |
| `topic` | the current topic (set by an earlier transform, else the source record's) |
| `ts_ms` | source commit time, epoch milliseconds |
| `ddl` | the statement of a `ddl` event |
| `before.COL`, `after.COL` | a column of the before- or after-image (null if there is no such image) |
| `row.COL` | the after-image if there is one, else the before-image |
| `key.COL` | a field of the Kafka key |
| `source.FIELD` | a source position field: `gtid`, `binlog_file`, `binlog_pos`, `server_id`, `commit_ts`, ... |

Column values are typed: decimals compare exactly, a DATETIME column compares
with a string literal by parsing it (`after.created > '2024-01-01'`), a number
column with a numeric string.

#### Functions

`lower(s)`, `upper(s)`, `trim(s)`, `length(s)`, `abs(x)`,
`startswith(s, prefix)`, `endswith(s, suffix)`, `contains(s, part)`,
`matches(s, 'regex')` (the whole string must match; the pattern must be a
literal), `coalesce(a, b, ...)` (the first non-null), `changed('col')` (an
update changed the column), `header('name')` (a header's value as text).

#### Nulls

A missing column or image is `null`. `null` equals only `null`; ordering
comparisons, `in`, `like` and `between` with a `null` operand are false, and so
are their `not` forms; arithmetic and functions (except `coalesce`) of `null`
give `null`. As a condition, `null`, `false`, `0` and `''` are false. Comparing
values that cannot be compared (a number with `'abc'`) is an error: the event
goes to the dead-letter output.
"""

from __future__ import annotations

import datetime as dt
import operator
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from cdc_smt.transforms.errors import ConfigError, TransformError
from cdc_smt.transforms.model import ChangeEvent, SourcePosition
from cdc_smt.transforms.types import parse_time

Fn = Callable[[ChangeEvent], Any]

KEYWORDS = frozenset({"and", "or", "not", "in", "is", "null", "true", "false", "like", "between"})
_IMAGE_ROOTS = frozenset({"before", "after", "row", "key"})
_SOURCE_FIELDS = frozenset(SourcePosition.__struct_fields__)
_SCALAR_ROOTS = ("op", "database", "table", "schema", "topic", "ts_ms", "ddl")

_TOKEN_RE = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<num>(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?)
  | (?P<str>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
  | (?P<qname>`(?:[^`]|``)+`)
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>==|!=|<>|<=|>=|[=<>+\-*/%(),.])
    """,
    re.VERBOSE,
)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"', "0": "\0"}


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # num | str | name | qname | op | eof
    text: str
    pos: int  # 0-based offset in the source


def tokenize(source: str, path: str = "") -> list[Token]:
    """Split ``source`` into tokens; an unknown character is a config error naming its column."""
    out: list[Token] = []
    pos = 0
    n = len(source)
    while pos < n:
        m = _TOKEN_RE.match(source, pos)
        if m is None:
            what = "unterminated string" if source[pos] in "'\"`" else f"unexpected character {source[pos]!r}"
            raise _syntax(source, pos, what, path)
        kind = m.lastgroup
        # Every _TOKEN_RE alternative is a named group, so a match always names its kind.
        assert kind is not None, f"_TOKEN_RE matched without a group at {pos}"
        if kind != "ws":
            out.append(Token(kind, m.group(), pos))
        pos = m.end()
    out.append(Token("eof", "", n))
    return out


def _syntax(source: str, pos: int, message: str, path: str) -> ConfigError:
    return ConfigError(f"{message} at column {pos + 1} of {source!r}", path or None)


def _unquote(text: str) -> str:
    body = text[1:-1]
    if "\\" not in body:
        return body
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), body, flags=re.DOTALL)


class Node:
    """A compiled sub-expression: ``fn(event)``; constants keep their ``value``."""

    __slots__ = ("fn", "const", "value", "text")

    def __init__(self, fn: Fn, text: str, *, const: bool = False, value: Any = None) -> None:
        self.fn = fn
        self.const = const
        self.value = value
        self.text = text


def _const(value: Any, text: str) -> Node:
    return Node(lambda e: value, text, const=True, value=value)


class Expression:
    """A compiled expression. ``evaluate`` gives its value, ``test`` its truth."""

    __slots__ = ("source", "_fn", "uses_values", "columns")

    def __init__(self, source: str, fn: Fn, uses_values: bool, columns: tuple[str, ...] = ()) -> None:
        self.source = source
        self._fn = fn
        #: reads row values: events are converted to typed values first
        self.uses_values = uses_values
        #: row columns named (``after.COL``, ``before.COL``, ``row.COL``, ``changed('COL')``)
        self.columns = columns

    def evaluate(self, event: ChangeEvent) -> Any:
        if self.uses_values and event.values is not None:
            event.typed()
        return self._fn(event)

    def test(self, event: ChangeEvent) -> bool:
        return truth(self.evaluate(event))

    def __repr__(self) -> str:
        return f"Expression({self.source!r})"


def truth(v: Any) -> bool:
    return v is not None and bool(v)


def compile_expr(source: str, *, path: str = "") -> Expression:
    """Parse ``source`` once into an :class:`Expression`; syntax errors name ``path`` and the column."""
    if not isinstance(source, str) or not source.strip():
        raise ConfigError("expression must be a non-empty string", path or None)
    parser = _Parser(source, path)
    node = parser.parse()
    return Expression(source, node.fn, parser.uses_values, tuple(dict.fromkeys(parser.columns)))


# ---------------------------------------------------------------------------
# Runtime semantics
# ---------------------------------------------------------------------------


def _fail(message: str, source: str) -> TransformError:
    return TransformError(f"{message} in expression {source!r}")


def _coerce(a: Any, b: Any) -> tuple[Any, Any]:
    """Bring two non-null operands to comparable types (or raise ``TypeError``)."""
    ta, tb = type(a), type(b)
    if ta is tb:
        return a, b
    if isinstance(a, str) and not isinstance(b, str):
        return _from_str(a, b), b
    if isinstance(b, str) and not isinstance(a, str):
        return a, _from_str(b, a)
    if ta is float and isinstance(b, Decimal):
        return a, float(b)
    if tb is float and isinstance(a, Decimal):
        return float(a), b
    return a, b


def _from_str(s: str, like: Any) -> Any:
    """``s`` parsed as the type of ``like`` (a literal compared with a typed column)."""
    if isinstance(like, bool):
        low = s.strip().lower()
        if low in ("true", "1"):
            return True
        if low in ("false", "0"):
            return False
        raise TypeError
    if isinstance(like, (int, Decimal)):
        try:
            return Decimal(s.strip())
        except InvalidOperation:
            raise TypeError from None
    if isinstance(like, float):
        return float(s)
    if isinstance(like, dt.datetime):
        return dt.datetime.fromisoformat(s)
    if isinstance(like, dt.date):
        return dt.date.fromisoformat(s)
    if isinstance(like, dt.timedelta):
        return parse_time(s)
    if isinstance(like, (bytes, bytearray)):
        return s.encode("utf-8")
    raise TypeError


_ORDER = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}


def _equal(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is None and b is None
    try:
        a, b = _coerce(a, b)
    except (TypeError, ValueError):
        return False
    return a == b


def _describe(v: Any) -> str:
    return f"{type(v).__name__} {v!r}"


# ---------------------------------------------------------------------------
# The parser
# ---------------------------------------------------------------------------


class _Parser:
    def __init__(self, source: str, path: str) -> None:
        self.source = source
        self.path = path
        self.tokens = tokenize(source, path)
        self.i = 0
        self.uses_values = False
        self.columns: list[str] = []

    # -- token helpers -----------------------------------------------------
    @property
    def tok(self) -> Token:
        return self.tokens[self.i]

    def _next(self) -> Token:
        t = self.tokens[self.i]
        self.i += 1
        return t

    def _is_kw(self, word: str, offset: int = 0) -> bool:
        t = self.tokens[min(self.i + offset, len(self.tokens) - 1)]
        return t.kind == "name" and t.text.lower() == word

    def _is_op(self, *ops: str) -> bool:
        t = self.tok
        return t.kind == "op" and t.text in ops

    def _expect_op(self, op: str) -> Token:
        if not self._is_op(op):
            raise self._error(f"expected {op!r}")
        return self._next()

    def _expect_kw(self, word: str) -> None:
        if not self._is_kw(word):
            raise self._error(f"expected {word!r}")
        self.i += 1

    def _error(self, message: str, tok: Token | None = None) -> ConfigError:
        t = tok or self.tok
        found = "end of expression" if t.kind == "eof" else repr(t.text)
        return _syntax(self.source, t.pos, f"{message}, found {found}", self.path)

    def _text(self, start: int) -> str:
        end = self.tokens[self.i - 1]
        return self.source[self.tokens[start].pos : end.pos + len(end.text)]

    # -- grammar -----------------------------------------------------------
    def parse(self) -> Node:
        node = self._or()
        if self.tok.kind != "eof":
            raise self._error("unexpected token")
        return node

    def _or(self) -> Node:
        start = self.i
        parts = [self._and()]
        while self._is_kw("or"):
            self.i += 1
            parts.append(self._and())
        if len(parts) == 1:
            return parts[0]
        fns = [p.fn for p in parts]

        def f(e: ChangeEvent) -> bool:
            for fn in fns:
                if truth(fn(e)):
                    return True
            return False

        return Node(f, self._text(start))

    def _and(self) -> Node:
        start = self.i
        parts = [self._not()]
        while self._is_kw("and"):
            self.i += 1
            parts.append(self._not())
        if len(parts) == 1:
            return parts[0]
        fns = [p.fn for p in parts]

        def f(e: ChangeEvent) -> bool:
            for fn in fns:
                if not truth(fn(e)):
                    return False
            return True

        return Node(f, self._text(start))

    def _not(self) -> Node:
        if self._is_kw("not"):
            start = self.i
            self.i += 1
            inner = self._not().fn
            return Node(lambda e: not truth(inner(e)), self._text(start))
        return self._test()

    def _test(self) -> Node:
        start = self.i
        left = self._sum()
        t = self.tok
        if t.kind == "op" and t.text in ("==", "=", "!=", "<>", "<", "<=", ">", ">="):
            self.i += 1
            right = self._sum()
            return self._compare(t.text, left, right, self._text(start))
        if self._is_kw("is"):
            self.i += 1
            negated = False
            if self._is_kw("not"):
                negated = True
                self.i += 1
            self._expect_kw("null")
            lf = left.fn
            if negated:
                return Node(lambda e: lf(e) is not None, self._text(start))
            return Node(lambda e: lf(e) is None, self._text(start))
        negated = False
        if self._is_kw("not") and (self._is_kw("in", 1) or self._is_kw("like", 1) or self._is_kw("between", 1)):
            negated = True
            self.i += 1
        if self._is_kw("in"):
            self.i += 1
            node = self._in(left, start)
        elif self._is_kw("like"):
            self.i += 1
            node = self._like(left, start)
        elif self._is_kw("between"):
            self.i += 1
            node = self._between(left, start)
        elif negated:  # pragma: no cover - guarded by the lookahead above
            raise self._error("expected 'in', 'like' or 'between'")
        else:
            return left
        if negated:
            inner = node.fn
            # null operands stay false under "not": `x not in (...)` with x null is false
            lf = left.fn
            return Node(lambda e: lf(e) is not None and not inner(e), self._text(start))
        return node

    def _compare(self, op: str, left: Node, right: Node, text: str) -> Node:
        lf, rf = left.fn, right.fn
        source = self.source
        if op in ("==", "="):
            return Node(lambda e: _equal(lf(e), rf(e)), text)
        if op in ("!=", "<>"):

            def ne(e: ChangeEvent) -> bool:
                return not _equal(lf(e), rf(e))

            return Node(ne, text)
        cmp = _ORDER[op]

        def order(e: ChangeEvent) -> bool:
            a = lf(e)
            b = rf(e)
            if a is None or b is None:
                return False
            try:
                a, b = _coerce(a, b)
                return cmp(a, b)
            except (TypeError, ValueError):
                raise _fail(f"cannot compare {_describe(a)} with {_describe(b)} ({text})", source) from None

        return Node(order, text)

    def _in(self, left: Node, start: int) -> Node:
        self._expect_op("(")
        items = [self._or()]
        while self._is_op(","):
            self.i += 1
            items.append(self._or())
        self._expect_op(")")
        lf = left.fn
        text = self._text(start)
        fns = [n.fn for n in items]
        if all(n.const for n in items):
            consts = [n.value for n in items]
            values = frozenset(c for c in consts if c is not None)
            # a str among str literals (or an int among int literals) is decided by the set alone
            kinds = {type(c) for c in values}
            exact = kinds if len(kinds) == 1 and kinds <= {str, int} else set()

            def const_in(e: ChangeEvent) -> bool:
                v = lf(e)
                if v is None:
                    return False
                if type(v) in exact:
                    return v in values
                return any(_equal(v, c) for c in consts)

            return Node(const_in, text)

        def f(e: ChangeEvent) -> bool:
            v = lf(e)
            if v is None:
                return False
            return any(_equal(v, fn(e)) for fn in fns)

        return Node(f, text)

    def _like(self, left: Node, start: int) -> Node:
        t = self.tok
        if t.kind != "str":
            raise self._error("'like' needs a string literal pattern")
        self.i += 1
        pattern = _unquote(t.text)
        regex = re.compile(
            "".join(".*" if ch == "%" else "." if ch == "_" else re.escape(ch) for ch in pattern), re.DOTALL
        )
        match = regex.fullmatch
        lf = left.fn

        def f(e: ChangeEvent) -> bool:
            v = lf(e)
            return isinstance(v, str) and match(v) is not None

        return Node(f, self._text(start))

    def _between(self, left: Node, start: int) -> Node:
        low = self._sum()
        self._expect_kw("and")
        high = self._sum()
        text = self._text(start)
        ge = self._compare(">=", left, low, text).fn
        le = self._compare("<=", left, high, text).fn
        return Node(lambda e: ge(e) and le(e), text)

    def _sum(self) -> Node:
        start = self.i
        node = self._product()
        while self._is_op("+", "-"):
            op = self._next().text
            right = self._product()
            node = self._arith(op, node, right, self._text(start))
        return node

    def _product(self) -> Node:
        start = self.i
        node = self._unary()
        while self._is_op("*", "/", "%"):
            op = self._next().text
            right = self._unary()
            node = self._arith(op, node, right, self._text(start))
        return node

    def _arith(self, op: str, left: Node, right: Node, text: str) -> Node:
        fn = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv, "%": operator.mod}[op]
        lf, rf = left.fn, right.fn
        source = self.source

        def f(e: ChangeEvent) -> Any:
            a = lf(e)
            b = rf(e)
            if a is None or b is None:
                return None
            if isinstance(a, float) and isinstance(b, Decimal):
                b = float(b)
            elif isinstance(b, float) and isinstance(a, Decimal):
                a = float(a)
            try:
                return fn(a, b)
            except (TypeError, ArithmeticError) as exc:
                raise _fail(f"cannot compute {text}: {type(exc).__name__}", source) from None

        return Node(f, text)

    def _unary(self) -> Node:
        if self._is_op("-"):
            start = self.i
            self.i += 1
            inner = self._unary()
            if inner.const and isinstance(inner.value, (int, Decimal, float)) and not isinstance(inner.value, bool):
                return _const(-inner.value, self._text(start))
            f = inner.fn
            source = self.source
            text = self._text(start)

            def neg(e: ChangeEvent) -> Any:
                v = f(e)
                if v is None:
                    return None
                try:
                    return -v
                except TypeError:
                    raise _fail(f"cannot negate {_describe(v)}", source) from None

            return Node(neg, text)
        return self._atom()

    def _atom(self) -> Node:
        t = self.tok
        if t.kind == "num":
            self.i += 1
            text = t.text
            value: Any = int(text) if text.isdigit() else Decimal(text)
            return _const(value, text)
        if t.kind == "str":
            self.i += 1
            return _const(_unquote(t.text), t.text)
        if t.kind == "op" and t.text == "(":
            self.i += 1
            node = self._or()
            self._expect_op(")")
            return node
        if t.kind == "name":
            low = t.text.lower()
            if low == "null":
                self.i += 1
                return _const(None, t.text)
            if low in ("true", "false"):
                self.i += 1
                return _const(low == "true", t.text)
            if low in KEYWORDS:
                raise self._error("expected a value")
            if self.tokens[self.i + 1].kind == "op" and self.tokens[self.i + 1].text == "(":
                return self._call()
            return self._path()
        raise self._error("expected a value")

    # -- names -------------------------------------------------------------
    def _field(self) -> str:
        t = self.tok
        if t.kind == "name":
            self.i += 1
            return t.text
        if t.kind == "qname":
            self.i += 1
            return t.text[1:-1].replace("``", "`")
        raise self._error("expected a field name after '.'")

    def _path(self) -> Node:
        start = self.i
        root_tok = self._next()
        root = root_tok.text
        fields: list[str] = []
        while self._is_op("."):
            self.i += 1
            fields.append(self._field())
        text = self._text(start)
        if root in _IMAGE_ROOTS:
            self.uses_values = True
            base = _image_getter(root)
            if not fields:
                return Node(base, text)
            if root != "key":
                self.columns.append(fields[0])
            return Node(_dig(base, fields), text)
        if root == "source":
            if len(fields) != 1 or fields[0] not in _SOURCE_FIELDS:
                known = ", ".join(sorted(_SOURCE_FIELDS))
                raise _syntax(self.source, root_tok.pos, f"source needs one field of: {known}", self.path)
            name = fields[0]
            return Node(lambda e: getattr(e.source, name), text)
        if root in _SCALAR_ROOTS:
            if fields:
                raise _syntax(self.source, root_tok.pos, f"{root!r} has no fields", self.path)
            return Node(_SCALAR_GETTERS[root], text)
        known = ", ".join(sorted((*_SCALAR_ROOTS, *_IMAGE_ROOTS, "source")))
        raise _syntax(self.source, root_tok.pos, f"unknown name {root!r} (known: {known})", self.path)

    def _call(self) -> Node:
        start = self.i
        name_tok = self._next()
        name = name_tok.text.lower()
        spec = _FUNCTIONS.get(name)
        if spec is None:
            known = ", ".join(sorted(_FUNCTIONS))
            raise _syntax(self.source, name_tok.pos, f"unknown function {name_tok.text!r} (known: {known})", self.path)
        self._expect_op("(")
        args: list[Node] = []
        if not self._is_op(")"):
            args.append(self._or())
            while self._is_op(","):
                self.i += 1
                args.append(self._or())
        self._expect_op(")")
        lo, hi, build = spec
        if not lo <= len(args) <= (hi if hi is not None else len(args)):
            want = f"{lo}" if lo == hi else f"{lo} or more" if hi is None else f"{lo} to {hi}"
            raise _syntax(self.source, name_tok.pos, f"{name}() takes {want} argument(s), got {len(args)}", self.path)
        if name in ("changed",):
            self.uses_values = True
            if args and args[0].const and isinstance(args[0].value, str):
                self.columns.append(args[0].value)
        try:
            fn = build(args, self.source)
        except ValueError as exc:
            raise _syntax(self.source, name_tok.pos, f"{name}(): {exc}", self.path) from None
        return Node(fn, self._text(start))


def _image_getter(root: str) -> Fn:
    if root == "before":
        return lambda e: e.before
    if root == "after":
        return lambda e: e.after
    if root == "row":
        return lambda e: e.after if e.after is not None else e.before
    return lambda e: e.key_values()


def _dig(base: Fn, fields: list[str]) -> Fn:
    if len(fields) == 1:
        name = fields[0]

        def one(e: ChangeEvent) -> Any:
            img = base(e)
            return img.get(name) if img is not None else None

        return one

    def many(e: ChangeEvent) -> Any:
        v = base(e)
        for f in fields:
            if not isinstance(v, dict):
                return None
            v = v.get(f)
        return v

    return many


def _topic(e: ChangeEvent) -> str | None:
    if e.topic is not None:
        return e.topic
    return e.record.topic if e.record is not None else None


_SCALAR_GETTERS: dict[str, Fn] = {
    "op": lambda e: e.op.value,
    "database": lambda e: e.source.database,
    "table": lambda e: e.source.table,
    "schema": lambda e: e.source.schema,
    "topic": _topic,
    "ts_ms": lambda e: e.ts_ms,
    "ddl": lambda e: e.ddl,
}


# -- functions ---------------------------------------------------------------


def _strict(fn: Callable[..., Any], name: str) -> Callable[[list[Node], str], Fn]:
    """A null-propagating function of typed arguments; type errors become event errors."""

    def build(args: list[Node], source: str) -> Fn:
        fns = [a.fn for a in args]

        def call(e: ChangeEvent) -> Any:
            vals = [f(e) for f in fns]
            if any(v is None for v in vals):
                return None
            try:
                return fn(*vals)
            except (TypeError, AttributeError, ValueError):
                shown = ", ".join(_describe(v) for v in vals)
                raise _fail(f"{name}() cannot take {shown}", source) from None

        return call

    return build


def _str_arg(v: Any) -> str:
    if not isinstance(v, str):
        raise TypeError
    return v


def _build_matches(args: list[Node], source: str) -> Fn:
    pat = args[1]
    if not (pat.const and isinstance(pat.value, str)):
        raise ValueError("the pattern must be a string literal")
    try:
        match = re.compile(pat.value).fullmatch
    except re.error as exc:
        raise ValueError(f"bad regular expression {pat.value!r}: {exc}") from None
    f = args[0].fn

    def call(e: ChangeEvent) -> Any:
        v = f(e)
        if v is None:
            return None
        return isinstance(v, str) and match(v) is not None

    return call


def _build_coalesce(args: list[Node], source: str) -> Fn:
    fns = [a.fn for a in args]

    def call(e: ChangeEvent) -> Any:
        for f in fns:
            v = f(e)
            if v is not None:
                return v
        return None

    return call


def _build_changed(args: list[Node], source: str) -> Fn:
    col = args[0]
    if not (col.const and isinstance(col.value, str)):
        raise ValueError("the column must be a string literal")
    name = col.value

    def call(e: ChangeEvent) -> bool:
        if e.before is None or e.after is None:
            return False
        if e.changed is not None:
            return name in e.changed
        if name not in e.before:
            return False  # before-images that list changed columns only
        return not _equal(e.before[name], e.after.get(name))

    return call


def _event_headers(e: ChangeEvent) -> Sequence[tuple[str, bytes]]:
    """Headers set by earlier transforms, else the source record's (none without a record)."""
    if e.headers is not None:
        return e.headers
    return e.record.headers if e.record is not None else ()


def _build_header(args: list[Node], source: str) -> Fn:
    f = args[0].fn

    def call(e: ChangeEvent) -> Any:
        name = f(e)
        for k, v in _event_headers(e):
            if k == name:
                return None if v is None else v.decode("utf-8", "replace")
        return None

    return call


_FUNCTIONS: dict[str, tuple[int, int | None, Callable[[list[Node], str], Fn]]] = {
    "lower": (1, 1, _strict(lambda s: _str_arg(s).lower(), "lower")),
    "upper": (1, 1, _strict(lambda s: _str_arg(s).upper(), "upper")),
    "trim": (1, 1, _strict(lambda s: _str_arg(s).strip(), "trim")),
    "length": (1, 1, _strict(len, "length")),
    "abs": (1, 1, _strict(abs, "abs")),
    "startswith": (2, 2, _strict(lambda s, p: _str_arg(s).startswith(_str_arg(p)), "startswith")),
    "endswith": (2, 2, _strict(lambda s, p: _str_arg(s).endswith(_str_arg(p)), "endswith")),
    "contains": (2, 2, _strict(lambda s, p: _str_arg(p) in _str_arg(s), "contains")),
    "matches": (2, 2, _build_matches),
    "coalesce": (1, None, _build_coalesce),
    "changed": (1, 1, _build_changed),
    "header": (1, 1, _build_header),
}

#: The language's documentation (this module's docstring), for the generated reference.
GRAMMAR_DOC: str = __doc__ or ""

__all__ = ["Expression", "GRAMMAR_DOC", "compile_expr", "tokenize", "truth"]
