"""Compiles an action list into a flat program of steps and jumps, checking it first:
unknown kinds or keys, missing fields, expressions that do not parse, unknown functions or
scopes, GotoAction targets and loop controls outside a loop — every issue at once, each
with the key path of the action at fault."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from raf.decl.powerfx.expressions import Expression, ExpressionError
from raf.decl.powerfx.functions import FUNCTIONS
from raf.decl.powerfx.variables import SCOPES, VariableError, check_writable, is_scope
from raf.workflow.errors import WorkflowValidationError

KeyPath = tuple[str | int, ...]

_COMMON = ("kind", "id", "displayName", "description", "disabled")
_SPECS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # kind: (required keys, optional keys)
    "SetVariable": (("variable", "value"), ()),
    "SetValue": (("path", "value"), ()),
    "SetMultipleVariables": (("assignments",), ()),
    "AppendValue": (("variable", "value"), ()),
    "SetTextVariable": (("variable", "value"), ()),
    "ResetVariable": (("variable",), ()),
    "ClearAllVariables": ((), ("variables",)),
    "ParseValue": (("variable", "value"), ("valueType",)),
    "If": (("condition", "then"), ("else",)),
    "ConditionGroup": (("conditions",), ("elseActions",)),
    "Foreach": (("items", "actions"), ("value", "item", "itemName", "index", "indexName")),
    "RepeatUntil": (("condition", "actions"), ()),
    "BreakLoop": ((), ()),
    "ContinueLoop": ((), ()),
    "GotoAction": (("actionId",), ("maxIterations",)),
    "SendActivity": (("activity",), ()),
    "SendMessage": (("message",), ("conversationId",)),
    "EmitEvent": ((), ("eventName", "eventValue", "event", "eventType", "data")),
    "InvokeAgent": (("agent",), ("input", "output", "conversationId", "message")),
    "InvokeFunctionTool": (
        ("functionName",),
        ("arguments", "output", "requireApproval", "require_approval", "conversationId"),
    ),
    "ExecuteCode": (("code",), ("language", "output", "result", "timeout", "sandbox")),
    "InvokeMcpTool": (
        ("toolName",),
        (
            "server",
            "serverUrl",
            "serverLabel",
            "arguments",
            "headers",
            "output",
            "requireApproval",
            "conversationId",
        ),
    ),
    "HttpRequestAction": (
        ("url",),
        ("method", "headers", "body", "response", "responseHeaders", "timeout", "conversationId"),
    ),
    "Question": (
        ("variable",),
        (
            "question",
            "prompt",
            "default",
            "entity",
            "alwaysPrompt",
            "property",
            "skipQuestionMode",
            "autoSend",
            "repeatCount",
            "invalidPrompt",
            "unrecognizedPrompt",
            "defaultValueResponse",
        ),
    ),
    "CopyConversationMessages": (
        (),
        ("conversationId", "messages", "sourceConversationId", "targetConversationId", "count"),
    ),
    "RetrieveConversationMessages": (
        ("messages",),
        ("conversationId", "limit", "sortOrder", "newestFirst", "after", "before"),
    ),
    "RetrieveConversationMessage": (("messageId", "message"), ("conversationId",)),
    "EditTable": (
        (),
        ("itemsVariable", "table", "changeType", "operation", "value", "item", "index", "key"),
    ),
    "EditTableV2": (
        (),
        (
            "itemsVariable",
            "table",
            "changeType",
            "operation",
            "value",
            "item",
            "row",
            "index",
            "key",
            "condition",
            "resultVariable",
        ),
    ),
    "RequestExternalInput": (("variable",), ("prompt", "default")),
    "Confirmation": ((), ("message", "variable", "yesLabel", "noLabel", "defaultValue")),
    "WaitForInput": ((), ("prompt", "variable", "timeout")),
    "EndWorkflow": ((), ()),
    "EndConversation": ((), ()),
    "CreateConversation": (("conversationId",), ()),
    "AddConversationMessage": (
        ("conversationId",),
        ("message", "role", "content", "text"),
    ),
}
_TEMPLATE_FIELDS = {
    ("SendActivity", "activity"),
    ("SendMessage", "message"),
    ("SetTextVariable", "value"),
    ("Question", "question"),
    ("Question", "prompt"),
    ("Question", "invalidPrompt"),
    ("Question", "unrecognizedPrompt"),
    ("Question", "defaultValueResponse"),
    ("RequestExternalInput", "prompt"),
    ("Confirmation", "message"),
    ("Confirmation", "text"),
    ("WaitForInput", "prompt"),
    ("AddConversationMessage", "message"),
    ("AddConversationMessage", "content"),
    ("AddConversationMessage", "text"),
    ("InvokeAgent", "input"),
    ("InvokeAgent", "message"),
}
"""Text fields whose `{expression}` parts are filled in when they are not `=` expressions."""
ALIASES = {
    "InvokeAzureAgent": "InvokeAgent",
    "InvokeAzureResponseAgent": "InvokeAgent",
    "CancelWorkflow": "EndWorkflow",
    "CancelAllDialogs": "EndWorkflow",
    "EndDialog": "EndWorkflow",
    "CancelDialog": "EndWorkflow",
}
"""Other spellings of action kinds, read as the kind they name."""
_FIELD_SPELLINGS: dict[str, tuple[tuple[str, str], ...]] = {
    "SetVariable": (("path", "variable"),),
    "SetValue": (("variable", "path"),),
    "SetTextVariable": (("path", "variable"), ("text", "value")),
    "ResetVariable": (("path", "variable"),),
    "If": (("actions", "then"),),
    "Foreach": (("source", "items"), ("itemsSource", "items")),
    "GotoAction": (("target", "actionId"),),
    "InvokeAgent": (("agentName", "agent"),),
    "Question": (("text", "question"), ("property", "variable"), ("defaultValue", "default")),
    "RequestExternalInput": (("message", "prompt"), ("property", "variable")),
    "AppendValue": (("path", "variable"),),
    "EmitEvent": (("eventType", "eventName"), ("data", "eventValue")),
    "Confirmation": (("question", "message"), ("text", "message"), ("property", "variable")),
    "WaitForInput": (("property", "variable"),),
    "ParseValue": (("source", "value"),),
    "CopyConversationMessages": (("limit", "count"),),
    "RetrieveConversationMessages": (("variable", "messages"),),
    "RetrieveConversationMessage": (("variable", "message"),),
    "InvokeMcpTool": (("connection", "server"),),
}
"""Microsoft Agent Framework's Python engine's other names of some action fields, read as
raf's (other spelling, raf's key) when raf's key is not written. `variable: {path: x}` is
read as `variable: x` everywhere, `output: {property: x}` of an action that asks as its
`variable: x`, and `SetMultipleVariables` `variables: {path: value, ...}` as its
assignments."""
_TOOL_OUTPUT = ("result", "messages", "autoSend")
"""Where a tool's call writes its result, and whether the result is said."""
_TEXT_RECORD = ("text",)
"""A text field written as a record: `{text: ...}` (its text, or a list of lines)."""
_TABLE_CHANGE = ("kind", "value", "resultVariable")
"""An EditTable change: its operation, the row, where the removed row goes."""
NESTED_KEYS: dict[tuple[str, ...], tuple[str, ...]] = {
    ("InvokeAgent", "agent"): ("name",),
    ("InvokeAgent", "input"): ("messages", "text", "arguments", "externalLoop"),
    ("InvokeAgent", "input", "externalLoop"): ("when",),
    ("InvokeAgent", "output"): (
        "messages",
        "result",
        "response",
        "property",
        "responseObject",
        "autoSend",
    ),
    ("InvokeFunctionTool", "output"): _TOOL_OUTPUT,
    ("InvokeMcpTool", "output"): _TOOL_OUTPUT,
    ("SendActivity", "activity"): _TEXT_RECORD,
    ("Question", "question"): _TEXT_RECORD,
    ("Question", "prompt"): _TEXT_RECORD,
    ("Question", "invalidPrompt"): _TEXT_RECORD,
    ("Question", "unrecognizedPrompt"): _TEXT_RECORD,
    ("Question", "defaultValueResponse"): _TEXT_RECORD,
    ("Question", "entity"): ("kind",),
    ("RequestExternalInput", "prompt"): _TEXT_RECORD,
    ("WaitForInput", "prompt"): _TEXT_RECORD,
    ("Confirmation", "message"): _TEXT_RECORD,
    ("AddConversationMessage", "message"): ("role", "text", "content"),
    ("EmitEvent", "event"): ("name", "data"),
    ("EditTable", "changeType"): _TABLE_CHANGE,
    ("EditTableV2", "changeType"): _TABLE_CHANGE,
}
"""The keys an action's mappings hold, by (action kind, key, ...): any other is an
unknown key, reported at its place (free mappings such as `arguments` are not listed)."""
MAX_REPEAT_COUNT = 10
"""The most times a Question asks again (`repeatCount`): each time waits for a person."""


def repeat_count_problem(repeat: Any) -> str | None:
    """What is wrong with a Question's `repeatCount` value, or None when it is a whole
    number from 0 to `MAX_REPEAT_COUNT`."""
    if isinstance(repeat, int) and not isinstance(repeat, bool) and 0 <= repeat <= MAX_REPEAT_COUNT:
        return None
    return f"repeatCount is a whole number from 0 to {MAX_REPEAT_COUNT}, not {repeat!r}"


ACTION_KINDS = tuple(sorted(_SPECS))
_BY_LOWER = {k.lower(): k for k in ACTION_KINDS} | {k.lower(): v for k, v in ALIASES.items()}
"""Action kinds are read without regard to case."""
_TEMPLATE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_.\[\]\"' ,()]*)\}")


@dataclass(kw_only=True, slots=True)
class Issue:
    """One problem of a workflow definition, at a key path of the document."""

    path: KeyPath
    message: str
    key: bool = False


class WorkflowDefinitionError(WorkflowValidationError):
    """A declarative workflow that cannot be built; `issues` lists every problem."""

    def __init__(self, issues: list[Issue], *, partial: Program | None = None) -> None:
        self.issues = issues
        self.partial = partial
        """What compiled despite the issues (its steps can still be checked), if known."""
        lines = [f"{show_path(i.path)}: {i.message}" if i.path else i.message for i in issues]
        super().__init__("the workflow has problems:\n  " + "\n  ".join(lines))


@dataclass(kw_only=True, slots=True)
class Step:
    """One action of the document, with where it is."""

    kind: str
    id: str
    fields: dict[str, Any]
    path: KeyPath
    where: str = ""
    """The file, line and column of the action, when it came from a file."""
    bare: frozenset[str] = frozenset()
    """Bare names its expressions may read: the item and index of enclosing loops, which
    are `Local.` variables."""


@dataclass(kw_only=True, slots=True)
class Instr:
    """One instruction: run a step, jump, branch on a condition, or drive a loop."""

    op: str
    """do, jump, branch, loop_init, loop_next, goto, end."""
    step: Step | None = None
    target: int = -1
    expr: str = ""
    loop: str = ""


@dataclass(kw_only=True, slots=True)
class Program:
    """A compiled action list."""

    instrs: list[Instr]
    labels: dict[str, int]
    expressions: dict[str, Expression]
    templates: dict[str, list[tuple[str, str]]] = field(default_factory=dict)


def show_path(path: KeyPath) -> str:
    """`trigger.actions[2].value` for a key path."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


def suggest(word: str, choices: Any) -> str | None:
    """The choice closest to a misspelt `word`, if any is close enough."""
    options = [str(c) for c in choices]
    found = difflib.get_close_matches(word, options, n=1, cutoff=0.6)
    if found:
        return found[0]
    lowered: dict[str, str] = {str(c).lower(): str(c) for c in options}
    return lowered.get(word.lower())


def hint(word: str, choices: Any) -> str:
    """A "did you mean" note when a choice is close to `word`, else an empty string."""
    close = suggest(word, choices)
    return f" (did you mean {close!r}?)" if close else ""


class _Compiler:
    def __init__(self, *, require_ids: bool = False) -> None:
        self.require_ids = require_ids
        """Whether each action of the top-level list needs its own `id` (Microsoft Agent
        Framework's rule for a trigger's actions)."""
        self.top: KeyPath | None = None
        """The path of the top-level action list."""
        self.instrs: list[Instr] = []
        self.labels: dict[str, int] = {}
        self.issues: list[Issue] = []
        self.expressions: dict[str, Expression] = {}
        self.templates: dict[str, list[tuple[str, str]]] = {}
        self.gotos: list[tuple[Instr, str, KeyPath]] = []
        self.loops: list[tuple[str, int, list[Instr]]] = []
        self.counter = 0
        self.spelt: dict[KeyPath, KeyPath] = {}
        """Where a field read under raf's name was written under another (for issues)."""
        self.bound: list[frozenset[str]] = []
        """The bare names each enclosing Foreach gives its item and index (`item`)."""

    def issue(self, path: KeyPath, message: str, *, key: bool = False) -> None:
        for size in range(len(path), 0, -1):
            written = self.spelt.get(path[:size])
            if written is not None:
                path = (*written, *path[size:])
                break
        self.issues.append(Issue(path=path, message=message, key=key))

    def respell(self, kind: str, raw: Mapping[str, Any], path: KeyPath) -> dict[str, Any]:
        """The action's fields under raf's names (see `_FIELD_SPELLINGS`)."""
        fields = dict(raw)
        for other, ours in _FIELD_SPELLINGS.get(kind, ()):
            if other not in fields:
                continue
            if ours in fields and other in _SPECS[kind][0] + _SPECS[kind][1]:
                continue  # both are raf's keys, each with its own meaning
            if ours in fields:
                self.issue(
                    (*path, other),
                    f"{other!r} and {ours!r} say the same; write one of them",
                    key=True,
                )
                fields.pop(other)
                continue
            fields = {(ours if k == other else k): v for k, v in fields.items()}
            self.spelt[(*path, ours)] = (*path, other)
        output = fields.get("output")
        if (
            kind in ("Question", "RequestExternalInput", "Confirmation", "WaitForInput")
            and "variable" not in fields
            and isinstance(output, Mapping)
            and set(output) == {"property"}
        ):
            fields = {k: v for k, v in fields.items() if k != "output"}
            fields["variable"] = output["property"]
            self.spelt[(*path, "variable")] = (*path, "output", "property")
        for key in ("variable", "path"):
            value = fields.get(key)
            if isinstance(value, Mapping) and set(value) == {"path"}:
                fields[key] = value["path"]
                self.spelt[(*path, key)] = (*path, key, "path")
        table = fields.get("variables")
        if kind == "SetMultipleVariables" and "assignments" not in fields:
            if isinstance(table, Mapping):
                fields.pop("variables")
                fields["assignments"] = [{"variable": k, "value": v} for k, v in table.items()]
                self.spelt[(*path, "assignments")] = (*path, "variables")
                for i, name in enumerate(table):
                    for part in ((), ("variable",), ("value",)):
                        spot = (*path, "assignments", i, *part)
                        self.spelt[spot] = (*path, "variables", str(name))
            elif table is not None:
                self.issue((*path, "variables"), "expected a mapping of variable paths to values")
                fields.pop("variables")
        return fields

    def emit(self, instr: Instr) -> Instr:
        self.instrs.append(instr)
        return instr

    # -- expressions -----------------------------------------------------------------------

    def expression(self, source: str, path: KeyPath) -> None:
        """Parse and check an expression (without its `=`); it is parsed once, and its
        names are checked where it appears (a loop's bare `item` is known only there)."""
        compiled = self.expressions.get(source)
        if compiled is None:
            try:
                compiled = Expression.compile(source)
            except ExpressionError as exc:
                self.issue(path, f"the expression does not parse: {exc}")
                return
        bound = frozenset().union(*self.bound)
        for parts, offset in compiled.names:
            if not is_scope(parts[0]) and parts[0] not in bound:
                self.issue(
                    path,
                    f"unknown variable scope {parts[0]!r} in {source!r} at character "
                    f"{offset + 1}{hint(parts[0], SCOPES)}; variables are Scope.name "
                    f"({', '.join(SCOPES)})",
                )
                return
        for name, offset in compiled.calls:
            if name.lower() not in FUNCTIONS:
                self.issue(
                    path,
                    f"unknown function {name!r} in {source!r} at character {offset + 1}"
                    f"{hint(name.lower(), FUNCTIONS)}",
                )
                return
        self.expressions[source] = compiled

    def values(self, value: Any, path: KeyPath, *, template: bool = False) -> None:
        """Check every expression (`=...`) and, for text fields, `{...}` template part."""
        if template:
            value = unquoted_template(value)
        if isinstance(value, str):
            if value.startswith("="):
                self.expression(value[1:], path)
            elif template:
                found = [(m.group(0), m.group(1)) for m in _TEMPLATE.finditer(value)]
                for _, inner in found:
                    self.expression(inner, path)
                if found:
                    self.templates[value] = found
        elif isinstance(value, Mapping):
            for k, v in value.items():
                self.values(v, (*path, str(k)), template=template)
        elif isinstance(value, list):
            for i, v in enumerate(value):
                self.values(v, (*path, i), template=template)

    def variable(self, value: Any, path: KeyPath) -> None:
        if not isinstance(value, str) or not value.strip():
            self.issue(path, "expected a variable path such as Local.answer")
            return
        try:
            check_writable(local_path(value))
        except VariableError as exc:
            self.issue(path, str(exc))

    # -- actions ---------------------------------------------------------------------------

    def block(self, actions: Any, path: KeyPath) -> None:
        if actions is None:
            return
        if not isinstance(actions, list):
            self.issue(path, "expected a list of actions")
            return
        for index, action in enumerate(actions):
            self.action(action, (*path, index))

    def action(self, raw: Any, path: KeyPath) -> None:
        if not isinstance(raw, Mapping):
            self.issue(path, "an action is a mapping with a 'kind'")
            return
        kind = raw.get("kind")
        if not isinstance(kind, str):
            self.issue(path, "an action needs a 'kind' (for example SendActivity)")
            return
        kind = _BY_LOWER.get(kind.lower(), kind)
        spec = _SPECS.get(kind)
        if spec is None:
            self.issue(
                (*path, "kind"),
                f"unknown action kind {kind!r}{hint(kind, ACTION_KINDS)}",
            )
            return
        raw = self.respell(kind, raw, path)
        required, optional = spec
        self.counter += 1
        action_id = raw.get("id")
        if action_id is None:
            if self.require_ids and path[:-1] == self.top:
                self.issue(path, f"{kind} needs an 'id' (every action of a trigger has one)")
            action_id = f"{kind}_{self.counter}"
        elif not isinstance(action_id, str) or not action_id:
            self.issue((*path, "id"), "an action id is a non-empty string")
            action_id = f"{kind}_{self.counter}"
        elif action_id in self.labels:
            self.issue((*path, "id"), f"two actions have the id {action_id!r}")
        allowed = set(required) | set(optional) | set(_COMMON)
        for key in raw:
            if key not in allowed:
                self.issue(
                    (*path, str(key)),
                    f"{kind} has no key {key!r}{hint(str(key), sorted(allowed))}",
                    key=True,
                )
        self.nested_keys(kind, raw, path)
        missing = [k for k in required if k not in raw]
        for key in missing:
            others = [o for o, ours in _FIELD_SPELLINGS.get(kind, ()) if ours == key]
            also = f" (or {', '.join(repr(o) for o in others)})" if others else ""
            self.issue(path, f"{kind} needs {key!r}{also}")
        if raw.get("disabled") is True:
            return
        self.labels.setdefault(action_id, len(self.instrs))
        step = Step(
            kind=kind,
            id=action_id,
            fields=dict(raw),
            path=path,
            bare=frozenset().union(*self.bound),
        )
        if missing:
            for key, value in raw.items():
                if key not in _COMMON and key in allowed:
                    self.values(value, (*path, str(key)))
            return
        handler = getattr(self, f"_{kind}", None)
        if handler is not None:
            handler(step)
        else:
            self.simple(step)

    def nested_keys(self, kind: str, raw: Mapping[str, Any], path: KeyPath) -> None:
        """Unknown keys inside an action's mappings of known keys (an agent's `input`,
        `output`, `agent`, ...), each an issue at its place."""
        for (owner, *inner), allowed in NESTED_KEYS.items():
            if owner != kind:
                continue
            value: Any = raw
            for part in inner:
                value = value.get(part) if isinstance(value, Mapping) else None
            if allowed is _TEXT_RECORD:  # `{Local.x}` unquoted is a template, not a record
                value = unquoted_template(value)
            if not isinstance(value, Mapping):
                continue
            where = ".".join(inner)
            for key in value:
                if key not in allowed:
                    self.issue(
                        (*path, *inner, str(key)),
                        f"{kind}'s {where} has no key {key!r}{hint(str(key), allowed)}",
                        key=True,
                    )

    def simple(self, step: Step) -> None:
        """A step that runs and moves on: check its values and variables."""
        fields = step.fields
        for key, value in fields.items():
            if key in _COMMON:
                continue
            if key in ("variable", "path"):
                self.variable(value, (*step.path, key))
            elif key == "output" and isinstance(value, Mapping):
                for out_key, target in value.items():
                    if out_key != "autoSend":
                        self.variable(target, (*step.path, key, str(out_key)))
            elif (
                key in ("output", "result", "response", "responseHeaders")
                and (step.kind in ("ExecuteCode", "HttpRequestAction"))
            ) or (key == "conversationId" and step.kind == "CreateConversation"):
                self.variable(value, (*step.path, key))
            else:
                as_template = (step.kind, key) in _TEMPLATE_FIELDS
                self.values(value, (*step.path, key), template=as_template)
        if step.kind == "SetMultipleVariables":
            self.assignments(step)
        self.emit(Instr(op="do", step=step))

    def assignments(self, step: Step) -> None:
        items = step.fields["assignments"]
        if not isinstance(items, list):
            self.issue((*step.path, "assignments"), "expected a list of {variable, value}")
            return
        items = step.fields["assignments"] = list(items)  # respelt here, not in the document
        for i, item in enumerate(items):
            where = (*step.path, "assignments", i)
            if isinstance(item, Mapping):
                item = self.respell_assignment(item, where)
                items[i] = item
            if not isinstance(item, Mapping) or "variable" not in item or "value" not in item:
                self.issue(where, "an assignment is a mapping with 'variable' and 'value'")
                continue
            self.variable(item["variable"], (*where, "variable"))

    def respell_assignment(self, item: Mapping[str, Any], where: KeyPath) -> dict[str, Any]:
        """An assignment's `path` (or `variable: {path: x}`) as its `variable`."""
        fields = dict(item)
        if "variable" not in fields and "path" in fields:
            fields = {("variable" if k == "path" else k): v for k, v in fields.items()}
            self.spelt[(*where, "variable")] = (*where, "path")
        value = fields.get("variable")
        if isinstance(value, Mapping) and set(value) == {"path"}:
            fields["variable"] = value["path"]
            self.spelt[(*where, "variable")] = (*where, "variable", "path")
        return fields

    def condition(self, value: Any, path: KeyPath) -> str:
        if isinstance(value, bool):
            return "true" if value else "false"
        if not isinstance(value, str):
            self.issue(path, "a condition is an expression such as =Local.count > 3")
            return "false"
        source = value[1:] if value.startswith("=") else value
        self.expression(source, path)
        return source

    def _If(self, step: Step) -> None:
        cond = self.condition(step.fields["condition"], (*step.path, "condition"))
        branch = self.emit(Instr(op="branch", step=step, expr=cond))
        self.block(step.fields["then"], (*step.path, "then"))
        if "else" in step.fields:
            skip = self.emit(Instr(op="jump"))
            branch.target = len(self.instrs)
            self.block(step.fields["else"], (*step.path, "else"))
            skip.target = len(self.instrs)
        else:
            branch.target = len(self.instrs)

    def _ConditionGroup(self, step: Step) -> None:
        conditions = step.fields["conditions"]
        ends: list[Instr] = []
        if not isinstance(conditions, list):
            self.issue((*step.path, "conditions"), "expected a list of {condition, actions}")
            return
        for i, item in enumerate(conditions):
            where = (*step.path, "conditions", i)
            if not isinstance(item, Mapping) or "condition" not in item:
                self.issue(where, "a condition is a mapping with 'condition' and 'actions'")
                continue
            for key in item:
                if key not in ("condition", "actions", "id", "displayName"):
                    options = ["condition", "actions", "id", "displayName"]
                    self.issue(
                        (*where, str(key)),
                        f"a condition has no key {key!r}{hint(str(key), options)}",
                        key=True,
                    )
            cond = self.condition(item["condition"], (*where, "condition"))
            branch = self.emit(Instr(op="branch", step=step, expr=cond))
            if isinstance(item.get("id"), str):
                self.labels.setdefault(item["id"], len(self.instrs))
            self.block(item.get("actions"), (*where, "actions"))
            ends.append(self.emit(Instr(op="jump")))
            branch.target = len(self.instrs)
        self.block(step.fields.get("elseActions"), (*step.path, "elseActions"))
        for end in ends:
            end.target = len(self.instrs)

    def _Question(self, step: Step) -> None:
        self.simple(step)
        repeat = step.fields.get("repeatCount")
        written = isinstance(repeat, str) and repeat.startswith("=")
        if repeat is None or written:
            return
        problem = repeat_count_problem(repeat)
        if problem is not None:
            self.issue((*step.path, "repeatCount"), problem)

    def _EmitEvent(self, step: Step) -> None:
        """EmitEvent names its event with `eventName` (or `event: {name, data}`)."""
        event = step.fields.get("event")
        if "eventName" not in step.fields and not (isinstance(event, Mapping) and "name" in event):
            self.issue(step.path, "EmitEvent needs 'eventName' (or 'event' with a 'name')")
        if event is not None and not isinstance(event, Mapping):
            self.issue((*step.path, "event"), "expected a mapping with 'name' and 'data'")
        elif isinstance(event, Mapping):
            for key in event:
                if key not in ("name", "data"):
                    self.issue(
                        (*step.path, "event", str(key)),
                        f"an event has no key {key!r}{hint(str(key), ['name', 'data'])}",
                        key=True,
                    )
        self.simple(step)

    def _Foreach(self, step: Step) -> None:
        fields = step.fields
        self.loop_items(fields["items"], (*step.path, "items"))
        names = {"item"} if not any(k in fields for k in ("value", "item", "itemName")) else set()
        for key in ("value", "item", "itemName", "index", "indexName"):
            if key in fields:
                self.variable(fields[key], (*step.path, key))
                named = str(fields[key]).strip().removeprefix("init:")
                if "." not in named:
                    names.add(named)  # a bare name is a Local. variable, read bare too
        self.emit(Instr(op="loop_init", step=step, loop=step.id))
        head = self.emit(Instr(op="loop_next", step=step, loop=step.id))
        head_pc = len(self.instrs) - 1
        exits: list[Instr] = []
        self.loops.append((step.id, head_pc, exits))
        self.bound.append(frozenset(names))
        self.block(fields["actions"], (*step.path, "actions"))
        self.bound.pop()
        self.loops.pop()
        self.emit(Instr(op="jump", target=head_pc))
        head.target = len(self.instrs)
        for instr in exits:
            instr.target = len(self.instrs)

    def _RepeatUntil(self, step: Step) -> None:
        """The actions, then the condition: they run again until it holds (at least
        once). ContinueLoop goes to the condition, BreakLoop past it."""
        start = self.emit(Instr(op="jump"))
        check_pc = len(self.instrs)
        cond = self.condition(step.fields["condition"], (*step.path, "condition"))
        check = self.emit(Instr(op="branch", step=step, expr=cond))
        leave = self.emit(Instr(op="jump"))
        start.target = check.target = len(self.instrs)
        exits: list[Instr] = []
        self.loops.append((step.id, check_pc, exits))
        self.block(step.fields["actions"], (*step.path, "actions"))
        self.loops.pop()
        self.emit(Instr(op="jump", target=check_pc))
        leave.target = len(self.instrs)
        for instr in exits:
            instr.target = len(self.instrs)

    def loop_items(self, items: Any, path: KeyPath) -> None:
        """Foreach needs a list: a literal one, or an expression that gives one at run time
        (checked now when the expression reads no variable)."""
        if isinstance(items, list):
            self.values(items, path)
            return
        if not isinstance(items, str) or not items.startswith("="):
            self.issue(path, f"Foreach items must be a list or an expression, not {items!r}")
            return
        self.expression(items[1:], path)
        compiled = self.expressions.get(items[1:])
        if compiled is None or compiled.names:
            return
        try:
            value = compiled.evaluate(lambda parts: None, FUNCTIONS)
        except ExpressionError:
            return
        if not isinstance(value, list):
            self.issue(path, f"Foreach items must be a list; {items!r} is not")

    def _BreakLoop(self, step: Step) -> None:
        if not self.loops:
            self.issue(step.path, "BreakLoop is only allowed inside a Foreach or RepeatUntil")
            return
        loop, _, exits = self.loops[-1]
        exits.append(self.emit(Instr(op="break", step=step, loop=loop)))

    def _ContinueLoop(self, step: Step) -> None:
        if not self.loops:
            self.issue(step.path, "ContinueLoop is only allowed inside a Foreach or RepeatUntil")
            return
        loop, head, _ = self.loops[-1]
        self.emit(Instr(op="jump", step=step, target=head, loop=loop))

    def _GotoAction(self, step: Step) -> None:
        target = step.fields["actionId"]
        limit = step.fields.get("maxIterations", 100)
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            self.issue((*step.path, "maxIterations"), "expected a whole number of at least 1")
        instr = self.emit(Instr(op="goto", step=step))
        if not isinstance(target, str):
            self.issue((*step.path, "actionId"), "expected the id of an action")
            return
        self.gotos.append((instr, target, (*step.path, "actionId")))

    def _EndWorkflow(self, step: Step) -> None:
        self.emit(Instr(op="end", step=step))

    def _EndConversation(self, step: Step) -> None:
        self.emit(Instr(op="end", step=step))

    def finish(self) -> None:
        for instr, target, path in self.gotos:
            if target in self.labels:
                instr.target = self.labels[target]
            else:
                self.issue(
                    path,
                    f"GotoAction target {target!r} is no action id{hint(target, self.labels)}",
                )


def unquoted_template(value: Any) -> Any:
    """`activity: {Local.x}` written without quotes is a YAML mapping `{"Local.x": None}`;
    in a text field it is read as the template it looks like, `"{Local.x}"`."""
    if isinstance(value, Mapping) and len(value) == 1:
        ((key, inner),) = value.items()
        if inner is None and isinstance(key, str) and key not in ("text", "content"):
            return "{" + key + "}"
    return value


def local_path(value: str) -> str:
    """A variable path; a bare name (no scope) is a `Local.` variable; Copilot Studio's
    `init:` prefix (the variable is made here) is read past."""
    value = value.strip().removeprefix("init:")
    return value if "." in value else f"Local.{value}"


def compile_actions(
    actions: Any, path: KeyPath = ("actions",), *, require_ids: bool = False
) -> Program:
    """Check and compile an action list; raises `WorkflowDefinitionError` with every issue.
    With `require_ids`, an action of `actions` itself (not one nested in a branch or a
    loop) without an `id` is one, as in a trigger's actions."""
    compiler = _Compiler(require_ids=require_ids)
    compiler.top = path
    compiler.block(actions, path)
    compiler.finish()
    program = Program(
        instrs=compiler.instrs,
        labels=compiler.labels,
        expressions=compiler.expressions,
        templates=compiler.templates,
    )
    if compiler.issues:
        raise WorkflowDefinitionError(compiler.issues, partial=program)
    return program


def iter_steps(program: Program) -> Iterator[Step]:
    """Every step of a program once."""
    seen: set[int] = set()
    for instr in program.instrs:
        if instr.step is not None and id(instr.step) not in seen:
            seen.add(id(instr.step))
            yield instr.step
