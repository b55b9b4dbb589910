"""The CEL rules (`x-kubernetes-validations`) of CustomResourceDefinitions, evaluated in Python.

The test kube-apiserver enforces these rules, and tests/live/test_own_crd_rules.py checks
each rule of our CRDs there. This module evaluates them in Python instead, on cel-python
(`celpy`, a pure-Python CEL implementation whose `matches()` runs on RE2 like Kubernetes'),
for what a server round trip per case would make slow: tests/api/test_api_cel_rules.py
compares the rules with the API types over hundreds of cases and hypothesis-generated specs,
without a server. test_own_crd_rules.py keeps this harness in step with the server: on each of
its cases the harness must find exactly the rule the server refuses.

What is modelled, and how:

- Discovery. `rules_of(crd)` walks the openAPIV3Schema of every served version and returns
  each rule with the wire path of its schema node (`spec.local`, `spec.list[*]` for list
  items, `spec.map[*]` for map values).
- Compilation. celpy only parses; the API server also type-checks against the schema when
  the CRD is written and refuses what would fail. `compile_rule` therefore parses and then
  refuses, naming the CRD and path: an identifier other than `self`, `oldSelf` or a macro
  variable; a function that is neither in CEL's standard library (as celpy provides it) nor
  in `KUBERNETES_FUNCTIONS`; a field selection on `self`/`oldSelf` that the schema does not
  declare ("undefined field"; fields kept only by preserve-unknown-fields are not accessible
  from CEL); `oldSelf` below a list that is not `x-kubernetes-list-type: map` (not
  correlatable); and rule keys this harness does not implement (`messageExpression`,
  `optionalOldSelf`).
- Evaluation, as the API server orders it: the object's schema defaults are applied first
  (a null in a non-nullable field is dropped or replaced by its default), then every rule is
  evaluated at every place its node occurs in the object, with `self` bound to the value
  there, and only where that value is present and not null. A rule that mentions `oldSelf`
  is a transition rule: it is evaluated only on update (`old` given) and only where the old
  object has a correlated value (same property path, same map key, same list-map keys); on
  create it is skipped.
- Values follow the Kubernetes type mapping: integer -> int, number -> double, boolean ->
  bool, string -> string (format byte, duration, date and date-time -> bytes, duration,
  timestamp), objects and maps -> map with string keys (a null field is absent), arrays ->
  list, a node without a type (preserve-unknown-fields, int-or-string) -> its JSON value.
- A rule that evaluates to anything but true is a violation, worded loosely like the API
  server's: `spec.local: Invalid value: "object": <message>`; an evaluation error (for
  example selecting an absent field without `has()`) is a violation too, as there.
  `reason` and `fieldPath` are honoured.

Not modelled: the cost budget (a CRD whose rules are estimated too expensive is refused by
the API server, not here), pruning of unknown fields, validation ratcheting, and Kubernetes
library functions beyond `KUBERNETES_FUNCTIONS` (none is implemented because no rule of ours
uses one: `has()`, `size()`, `in` and the ternary are standard CEL; a rule that uses an
extension fails compilation here until its minimum is added to that table).
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import celpy
import lark
from celpy import celtypes
from celpy.adapter import json_to_cel
from celpy.celparser import CELParseError
from celpy.evaluation import CELEvalError, CELUnsupportedError, base_functions

from tests.support.crd_defaults import defaulted

JsonObject = Mapping[str, Any]

RULES_KEY = "x-kubernetes-validations"
ROOT_PATH = "<root>"

KUBERNETES_FUNCTIONS: dict[str, Callable[..., Any]] = {}
"""Kubernetes CEL library functions (beyond standard CEL) implemented here, by name. None yet."""

_STANDARD_FUNCTIONS = frozenset(name for name in base_functions if name.isidentifier())
_MACROS = frozenset({"all", "exists", "exists_one", "map", "filter"})
_FUNCTION_MACROS = frozenset({"has", "dyn"})
_VARIABLES = frozenset({"self", "oldSelf"})
_TYPE_NAMES = frozenset({"int", "uint", "double", "bool", "string", "bytes", "list", "map", "null_type", "type"})
_UNSUPPORTED_KEYS = ("messageExpression", "optionalOldSelf")
_REASONS = {
    "FieldValueInvalid": "Invalid value: {type}: {message}",
    "FieldValueForbidden": "Forbidden: {message}",
    "FieldValueRequired": "Required value: {message}",
    "FieldValueDuplicate": "Duplicate value: {type}: {message}",
}
_ENVIRONMENT = celpy.Environment()


class CelRuleCompileError(ValueError):
    """A rule the API server would refuse when the CRD is written; names the CRD and path."""

    def __init__(self, rule: CelRule, problem: str) -> None:
        super().__init__(f"{rule.crd} {rule.path}: rule {rule.rule!r}: {problem}")
        self.rule = rule
        self.problem = problem


@dataclass(frozen=True)
class CelRule:
    """One `x-kubernetes-validations` entry and where it sits in one served version's schema."""

    crd: str
    group: str
    kind: str
    version: str
    path: str
    rule: str
    message: str
    entry: JsonObject = field(compare=False, repr=False)
    schema: JsonObject = field(compare=False, repr=False)
    below_uncorrelatable_list: bool = field(default=False, compare=False, repr=False)

    @property
    def id(self) -> str:
        """`Kind path: message`, the name tests use for a rule."""
        return f"{self.kind} {self.path}: {self.message}"


@dataclass(frozen=True)
class CompiledRule:
    """A rule with its celpy program, ready to evaluate."""

    rule: CelRule
    program: celpy.Runner = field(compare=False, repr=False)
    transition: bool


@dataclass(frozen=True)
class Violation:
    """A rule that did not hold at one place of one object."""

    rule: CelRule
    path: str
    text: str

    def __str__(self) -> str:
        return self.text


def rules_of(crd: JsonObject) -> tuple[CelRule, ...]:
    """Every CEL rule of every served version of `crd`, in schema order. Pure."""
    spec = crd["spec"]
    found: list[CelRule] = []
    for version in spec.get("versions", ()):
        if version.get("served") is not True:
            continue
        schema = (version.get("schema") or {}).get("openAPIV3Schema") or {}
        for path, node, uncorrelatable in _schema_nodes(schema, "", False):
            for entry in node.get(RULES_KEY, ()):
                found.append(
                    CelRule(
                        crd=crd["metadata"]["name"],
                        group=spec["group"],
                        kind=spec["names"]["kind"],
                        version=version["name"],
                        path=path or ROOT_PATH,
                        rule=entry.get("rule", ""),
                        message=entry.get("message") or f"failed rule: {entry.get('rule', '')}",
                        entry=entry,
                        schema=node,
                        below_uncorrelatable_list=uncorrelatable,
                    )
                )
    return tuple(found)


def _schema_nodes(schema: JsonObject, path: str, uncorrelatable: bool) -> Iterator[tuple[str, JsonObject, bool]]:
    yield path, schema, uncorrelatable
    for name, child in (schema.get("properties") or {}).items():
        yield from _schema_nodes(child, f"{path}.{name}" if path else name, uncorrelatable)
    if isinstance(schema.get("additionalProperties"), Mapping):
        yield from _schema_nodes(schema["additionalProperties"], f"{path}[*]", uncorrelatable)
    if isinstance(schema.get("items"), Mapping):
        correlatable = schema.get("x-kubernetes-list-type") == "map"
        yield from _schema_nodes(schema["items"], f"{path}[*]", uncorrelatable or not correlatable)


def compile_rule(rule: CelRule) -> CompiledRule:
    """Parse and check `rule` as the API server does when the CRD is written.

    Raises CelRuleCompileError naming the CRD, the path and the problem.
    """
    unsupported = [key for key in _UNSUPPORTED_KEYS if key in rule.entry]
    if unsupported:
        raise CelRuleCompileError(rule, f"{', '.join(unsupported)} is not supported by this harness")
    if rule.entry.get("reason") not in (None, *_REASONS):
        raise CelRuleCompileError(rule, f"unknown reason {rule.entry['reason']!r}")
    if not rule.rule.strip():
        raise CelRuleCompileError(rule, "the rule is empty")
    try:
        tree = _ENVIRONMENT.compile(rule.rule)
    except CELParseError as error:
        raise CelRuleCompileError(rule, f"syntax error: {' '.join(str(error).split())}") from error
    problems = _check(tree, rule.schema)
    transition = any(_ident_name(node) == "oldSelf" for node in tree.iter_subtrees())
    if transition and rule.below_uncorrelatable_list:
        problems.append("oldSelf cannot be used on the uncorrelatable portion of the schema (items of a list)")
    if problems:
        raise CelRuleCompileError(rule, "; ".join(problems))
    program = _ENVIRONMENT.program(tree, functions=dict(KUBERNETES_FUNCTIONS))
    return CompiledRule(rule=rule, program=program, transition=transition)


def compile_errors(crds: Iterable[JsonObject]) -> list[str]:
    """Every rule of `crds` that fails to compile, as `crd path: rule: problem` lines."""
    errors = []
    for crd in crds:
        for rule in rules_of(crd):
            try:
                compile_rule(rule)
            except CelRuleCompileError as error:
                errors.append(str(error))
    return errors


def _ident_name(node: lark.Tree[lark.Token]) -> str | None:
    if node.data == "ident" and node.children:
        return str(node.children[0])
    return None


def _first_ident(node: lark.Tree[lark.Token]) -> str | None:
    return next((name for sub in _top_down(node) if (name := _ident_name(sub))), None)


def _top_down(node: lark.Tree[lark.Token]) -> Iterator[lark.Tree[lark.Token]]:
    """`node` and its subtrees, parents first, children left to right: the order of lark's
    Tree.iter_subtrees_topdown, which lark leaves unannotated."""
    yield node
    for child in node.children:
        if isinstance(child, lark.Tree):
            yield from _top_down(child)


def _check(tree: lark.Tree[lark.Token], schema: JsonObject) -> list[str]:
    """What the API server's type-check refuses and celpy would only find at run time."""
    problems: dict[str, None] = {}
    bound = set()
    for node in tree.iter_subtrees():
        if node.data == "member_dot_arg" and str(node.children[1]) in _MACROS and len(node.children) > 2:
            arguments = node.children[2]
            if isinstance(arguments, lark.Tree) and isinstance(first := arguments.children[0], lark.Tree):
                variable = _first_ident(first)
                if variable:
                    bound.add(variable)
    functions = _STANDARD_FUNCTIONS | KUBERNETES_FUNCTIONS.keys()
    for node in tree.iter_subtrees():
        name = _ident_name(node)
        if name is not None and name not in _VARIABLES | bound | _TYPE_NAMES:
            problems[f"undeclared reference to '{name}'"] = None
        if node.data == "ident_arg":
            function = str(node.children[0])
            if function not in functions | _FUNCTION_MACROS:
                problems[f"undeclared reference to function '{function}' (not implemented by this harness)"] = None
        if node.data == "member_dot_arg":
            method = str(node.children[1])
            if method not in functions | _MACROS:
                problems[f"undeclared reference to function '{method}' (not implemented by this harness)"] = None
        if node.data == "member_dot":
            chain = _self_chain(node)
            if chain is not None:
                problem = _resolve(schema, chain)
                if problem:
                    problems[problem] = None
    return list(problems)


def _self_chain(node: lark.Tree[lark.Token]) -> list[str] | None:
    """`self.a.b` -> ['a', 'b']; None when the selection does not start at self or oldSelf."""
    names: list[str] = []
    current: Any = node
    while isinstance(current, lark.Tree):
        if current.data == "member_dot":
            names.append(str(current.children[1]))
            current = current.children[0]
        elif current.data in ("member", "primary") and len(current.children) == 1:
            current = current.children[0]
        else:
            return list(reversed(names)) if _ident_name(current) in _VARIABLES else None
    return None


def _resolve(schema: JsonObject, chain: list[str]) -> str | None:
    """Why the API server would refuse selecting `chain` below `schema`, or None.

    Declared properties are selectable, and map values by key; fields kept only by
    x-kubernetes-preserve-unknown-fields, and properties of unknown type, are not accessible
    from CEL. An int-or-string or a value of unknown type ends the check (it is dynamic).
    """
    node = schema
    for name in chain:
        if node.get("x-kubernetes-int-or-string"):
            return None
        if isinstance(node.get("additionalProperties"), Mapping):
            node = node["additionalProperties"]
            continue
        kind = node.get("type")
        if kind not in (None, "object"):
            return f"type '{kind}' does not support field selection ('{name}')"
        child = (node.get("properties") or {}).get(name)
        if child is None or ("type" not in child and not child.get("x-kubernetes-int-or-string")):
            return f"undefined field '{name}'"
        node = child
    return None


def to_cel(value: Any, schema: JsonObject) -> Any:
    """A YAML-loaded value as the CEL value the API server binds for a node of `schema`. Pure."""
    if value is None:
        return None
    kind = schema.get("type")
    if isinstance(value, bool):
        return celtypes.BoolType(value)
    if kind == "number" and isinstance(value, (int, float)):
        return celtypes.DoubleType(float(value))
    if kind == "integer" and isinstance(value, int):
        return celtypes.IntType(value)
    if kind == "string" and isinstance(value, str):
        return _formatted_string(value, schema.get("format"))
    if isinstance(value, list) and kind == "array":
        items = schema.get("items") or {}
        return celtypes.ListType([to_cel(item, items) for item in value])
    if isinstance(value, Mapping) and kind == "object":
        properties: JsonObject = schema.get("properties") or {}
        values: JsonObject = (
            schema["additionalProperties"] if isinstance(schema.get("additionalProperties"), Mapping) else {}
        )
        return celtypes.MapType(
            {
                celtypes.StringType(key): to_cel(item, properties.get(key, values))
                for key, item in value.items()
                if item is not None
            }
        )
    return json_to_cel(value)


def _formatted_string(value: str, fmt: str | None) -> Any:
    try:
        if fmt == "byte":
            return celtypes.BytesType(value.encode())
        if fmt == "duration":
            return celtypes.DurationType(value)
        if fmt == "date":
            return celtypes.TimestampType(datetime.datetime.fromisoformat(value).replace(tzinfo=datetime.UTC))
        if fmt == "date-time":
            return celtypes.TimestampType(value)
    except (ValueError, TypeError):
        pass
    return celtypes.StringType(value)


def _type_name(value: Any) -> str:
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    return "string"


_ABSENT = object()


class CelValidator:
    """The CEL rules of a set of CRDs, compiled once; checks objects against them."""

    def __init__(self, crds: Iterable[JsonObject]) -> None:
        """Compile every rule of every served version; raises the first CelRuleCompileError."""
        self._schemas: dict[tuple[str, str, str], JsonObject] = {}
        self._rules: dict[tuple[str, str, str], dict[str, list[CompiledRule]]] = {}
        for crd in crds:
            spec = crd["spec"]
            for version in spec.get("versions", ()):
                if version.get("served") is True:
                    key = (spec["group"], version["name"], spec["names"]["kind"])
                    self._schemas[key] = (version.get("schema") or {}).get("openAPIV3Schema") or {}
                    self._rules[key] = {}
            for rule in rules_of(crd):
                compiled = compile_rule(rule)
                by_path = self._rules[(rule.group, rule.version, rule.kind)]
                by_path.setdefault("" if rule.path == ROOT_PATH else rule.path, []).append(compiled)

    @property
    def rules(self) -> tuple[CelRule, ...]:
        """Every compiled rule, in CRD and schema order."""
        return tuple(
            compiled.rule for by_path in self._rules.values() for group in by_path.values() for compiled in group
        )

    def violations(self, obj: JsonObject, *, old: JsonObject | None = None) -> list[Violation]:
        """Every rule `obj` breaks; with `old`, as an update of `old` (transition rules included).

        Raises LookupError when no loaded CRD serves the object's apiVersion and kind.
        """
        group, _, version = str(obj.get("apiVersion", "")).rpartition("/")
        key = (group, version, str(obj.get("kind")))
        if key not in self._schemas:
            raise LookupError(f"no CRD with CEL rules serves {obj.get('apiVersion')} {obj.get('kind')}")
        schema = self._schemas[key]
        current = defaulted(obj, schema)
        previous = defaulted(old, schema) if old is not None else _ABSENT
        found: list[Violation] = []
        self._walk(self._rules[key], schema, current, previous, "", "", found)
        return found

    def errors(self, obj: JsonObject, *, old: JsonObject | None = None) -> list[str]:
        """`violations` as `path: Invalid value: ...: message` lines; empty when every rule holds."""
        return [violation.text for violation in self.violations(obj, old=old)]

    def _walk(
        self,
        rules: Mapping[str, list[CompiledRule]],
        schema: JsonObject,
        value: Any,
        old: Any,
        schema_path: str,
        path: str,
        found: list[Violation],
    ) -> None:
        if value is None:
            return
        for compiled in rules.get(schema_path, ()):
            violation = _evaluate(compiled, schema, value, old, path)
            if violation is not None:
                found.append(violation)
        for child_path, child_schema, child, child_old, child_schema_path in _children(schema, value, old, path):
            self._walk(rules, child_schema, child, child_old, _join(schema_path, child_schema_path), child_path, found)


def _join(base: str, part: str) -> str:
    if part.startswith("["):
        return base + part
    return f"{base}.{part}" if base else part


def _children(schema: JsonObject, value: Any, old: Any, path: str) -> Iterator[tuple[str, JsonObject, Any, Any, str]]:
    """(path, schema, value, correlated old value or _ABSENT, schema path part) of each child."""
    old_map = old if isinstance(old, Mapping) else {}
    if isinstance(value, Mapping) and isinstance(schema.get("properties"), Mapping):
        for name, child in schema["properties"].items():
            if name in value:
                yield _join(path, name), child, value[name], old_map.get(name, _ABSENT), name
    elif isinstance(value, Mapping) and isinstance(schema.get("additionalProperties"), Mapping):
        for key, item in value.items():
            yield f"{path}[{key}]", schema["additionalProperties"], item, old_map.get(key, _ABSENT), "[*]"
    elif isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        keys = schema.get("x-kubernetes-list-map-keys") or ()
        correlate = schema.get("x-kubernetes-list-type") == "map" and isinstance(old, list)
        olds = {_map_key(item, keys): item for item in old} if correlate else {}
        for index, item in enumerate(value):
            previous = olds.get(_map_key(item, keys), _ABSENT) if correlate else _ABSENT
            yield f"{path}[{index}]", schema["items"], item, previous, "[*]"


def _map_key(item: Any, keys: Iterable[str]) -> tuple[Any, ...]:
    return tuple(item.get(key) if isinstance(item, Mapping) else None for key in keys)


def _evaluate(compiled: CompiledRule, schema: JsonObject, value: Any, old: Any, path: str) -> Violation | None:
    rule = compiled.rule
    activation = {"self": to_cel(value, schema)}
    if compiled.transition:
        if old is _ABSENT or old is None:
            return None
        activation["oldSelf"] = to_cel(old, schema)
    try:
        result = compiled.program.evaluate(activation)
    except (CELEvalError, CELUnsupportedError) as error:
        message = f"rule evaluation error: {_short(error)} (rule: {rule.rule})"
        return _violation(rule, value, path, message, reason=None)
    if isinstance(result, CELEvalError):
        message = f"rule evaluation error: {_short(result)} (rule: {rule.rule})"
        return _violation(rule, value, path, message, reason=None)
    if not isinstance(result, celtypes.BoolType):
        return _violation(rule, value, path, f"rule did not return a bool but {result!r} (rule: {rule.rule})", None)
    if result:
        return None
    return _violation(rule, value, path, rule.message, reason=rule.entry.get("reason"))


def _short(error: Exception) -> str:
    first = error.args[0] if error.args else error
    return " ".join(str(first).split())[:200]


def _violation(rule: CelRule, value: Any, path: str, message: str, reason: str | None) -> Violation:
    field_path = str(rule.entry.get("fieldPath") or "")
    where = _join(path, field_path.removeprefix(".")) if field_path else path
    where = where or ROOT_PATH
    template = _REASONS.get(reason or "FieldValueInvalid", _REASONS["FieldValueInvalid"])
    text = f"{where}: " + template.format(type=f'"{_type_name(value)}"', message=message)
    return Violation(rule=rule, path=where, text=text)
