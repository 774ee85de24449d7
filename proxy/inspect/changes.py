"""What the proxy changed in an exchange: the inspector's "changed" marks, as a structural JSON diff.

A mark means "the proxy changed this": a value the proxy added, dropped or altered on the way,
compared with what the client itself sent for the same thing. Comparing the client's request with
what went to Gemini line by line (the page's first way) marked nearly everything, since an OpenAI or
Anthropic request and a generateContent body are different formats: `input` is not `contents`, and a
translation is not a change. So the diff only compares like with like:

- Same format on both sides (a Gemini-native client, an intercepted flow): the whole request and, for
  a whole (not streamed) answer, the whole answer, structurally (objects by key, arrays aligned on
  their equal elements).
- Different formats: only what has one counterpart on each side, found the way the proxy itself finds
  it. Each declared function's name, description and parameter schema against the client's tool of
  that name (Gemini names made from the client's by the proxy's own ToolNames: a sanitized name is a
  change), and every `thoughtSignature` in the contents, which the client's protocol has no field for:
  each one is the proxy's (restored from its store or a carrier, or the sentinel). The messages'
  mapping to `contents`, the options' to `generationConfig` and the answer's translation back are the
  format, not changes, and are not marked (the decisions list says what the proxy decided there).

Within a schema a type's case is the format (JSON Schema's `string` is Gemini's `STRING`); every
other difference is a repair: a keyword dropped, a hint moved into the description, a `$ref` inlined,
a type list made `nullable`.

The result: {"request": [...], "answer": [...]} of {"op", "a", "b", "was"?}: `op` added, removed or
changed; `a` the JSON Pointer (RFC 6901) in the source (the client's request; Gemini's answer), `b` in
the result (the request sent to Gemini; the client's answer); `was` the source's value of a change."""

from typing import Any

from proxy.tools.tool_names import ToolNames, qualified

MAX_CHANGES = 500  # entries per side: a rewritten history is shown as its first changes
MAX_ALIGN = 40_000  # array alignment's cells (n*m) above which arrays are compared position by position
SCHEMA_KEYS = frozenset({"parameters", "parametersJsonSchema", "response", "responseJsonSchema"})
SAME_FORMAT = frozenset({"gemini"})  # protocols whose requests are Gemini's (and their answers)


def pointer(tokens: tuple) -> str:
    return "".join("/" + str(t).replace("~", "~0").replace("/", "~1") for t in tokens)


class Diff:
    def __init__(self) -> None:
        self.out: list[dict[str, Any]] = []

    def add(self, op: str, a: tuple | None, b: tuple | None, was: Any = None) -> None:
        if len(self.out) >= MAX_CHANGES:
            return
        entry: dict[str, Any] = {"op": op, "a": None if a is None else pointer(a),
                                 "b": None if b is None else pointer(b)}
        if op == "changed":
            entry["was"] = was
        self.out.append(entry)

    def compare(self, x: Any, y: Any, a: tuple, b: tuple, schema: Any = False) -> None:
        """`schema`: True inside a schema, or a function telling from `b` whether a node is one."""
        inside = schema is True or (callable(schema) and schema(b))
        if type(x) is dict and type(y) is dict:
            for key, value in x.items():
                if key in y:
                    self.compare(value, y[key], (*a, key), (*b, key), True if inside else schema)
                else:
                    self.add("removed", (*a, key), None)
            for key in y:
                if key not in x:
                    self.add("added", None, (*b, key))
        elif type(x) is list and type(y) is list:
            self._lists(x, y, a, b, True if inside else schema)
        elif not same(x, y, inside and a[-1:] == ("type",)):
            self.add("changed", a, b, x)

    def _lists(self, x: list, y: list, a: tuple, b: tuple, schema: Any) -> None:
        if len(x) == len(y) or len(x) * len(y) > MAX_ALIGN:
            for i in range(min(len(x), len(y))):
                self.compare(x[i], y[i], (*a, i), (*b, i), schema)
            for i in range(len(y), len(x)):
                self.add("removed", (*a, i), None)
            for j in range(len(x), len(y)):
                self.add("added", None, (*b, j))
            return
        # Align on equal elements (a longest common subsequence); between two matches, the elements
        # left are compared in order, the rest added or removed (a merged or inserted turn).
        n, m = len(x), len(y)
        keys_x, keys_y = [canonical(v) for v in x], [canonical(v) for v in y]
        table = [[0] * (m + 1) for _ in range(n + 1)]
        for i in range(n - 1, -1, -1):
            for j in range(m - 1, -1, -1):
                table[i][j] = (table[i + 1][j + 1] + 1 if keys_x[i] == keys_y[j]
                               else max(table[i + 1][j], table[i][j + 1]))
        i = j = 0
        gap_x: list[int] = []
        gap_y: list[int] = []
        while i < n or j < m:
            if i < n and j < m and keys_x[i] == keys_y[j]:
                self._gap(x, y, gap_x, gap_y, a, b, schema)
                gap_x, gap_y = [], []
                i, j = i + 1, j + 1
            elif j < m and (i >= n or table[i][j + 1] >= table[i + 1][j]):
                gap_y.append(j)
                j += 1
            else:
                gap_x.append(i)
                i += 1
        self._gap(x, y, gap_x, gap_y, a, b, schema)

    def _gap(self, x: list, y: list, gap_x: list[int], gap_y: list[int], a: tuple, b: tuple, schema: Any) -> None:
        for i, j in zip(gap_x, gap_y, strict=False):
            self.compare(x[i], y[j], (*a, i), (*b, j), schema)
        for i in gap_x[len(gap_y):]:
            self.add("removed", (*a, i), None)
        for j in gap_y[len(gap_x):]:
            self.add("added", None, (*b, j))


def same(x: Any, y: Any, type_name: bool = False) -> bool:
    """Equal values; a schema's type names equal whatever their case (the format's, not a change)."""
    if type_name and type(x) is str and type(y) is str:
        return x.lower() == y.lower()
    return type(x) is type(y) and x == y


def canonical(value: Any) -> Any:
    """A value as a hashable key for aligning arrays (bool and int kept apart, as JSON does)."""
    if type(value) is dict:
        return ("{", tuple(sorted((k, canonical(v)) for k, v in value.items())))
    if type(value) is list:
        return ("[", tuple(canonical(v) for v in value))
    return (type(value).__name__, value)


def in_schema(b: tuple) -> bool:
    """Whether a node of a Gemini request is (inside) a schema: a declaration's parameters or
    response, or the answer's schema (under Cloud Code's {"request": ...} too)."""
    for k in range(len(b) - 2):
        if b[k] == "functionDeclarations" and k + 2 < len(b) and b[k + 2] in SCHEMA_KEYS:
            return True
    return any(b[k] == "generationConfig" and b[k + 1] in ("responseSchema", "responseJsonSchema")
               for k in range(len(b) - 1))


Tool = tuple[tuple, dict[str, Any], str, str]


def client_tools(protocol: str, body: dict[str, Any]) -> dict[str, Tool]:
    """The client's function tools by the Gemini name the proxy gives them: (where the tool is, the
    tool, the key of its schema, its flat name: a namespace's member is `ns__name`, the format's way)."""
    names = ToolNames()
    found: dict[str, Tool] = {}

    def add(name: str, at: tuple, tool: dict[str, Any], schema_key: str, namespace: str | None = None) -> None:
        found[names.add(name, namespace)] = (at, tool, schema_key, qualified(name, namespace))

    tools = body.get("tools")
    for i, tool in enumerate(tools if type(tools) is list else ()):
        if type(tool) is not dict:
            continue
        if protocol == "chat":
            fn = tool.get("function")
            if type(fn) is dict and type(fn.get("name")) is str:
                add(fn["name"], ("tools", i, "function"), fn, "parameters")
        elif protocol == "anthropic":
            if type(tool.get("name")) is str and "input_schema" in tool:
                add(tool["name"], ("tools", i), tool, "input_schema")
        elif tool.get("type") == "namespace" and type(tool.get("tools")) is list:
            for j, member in enumerate(tool["tools"]):
                if type(member) is dict and type(member.get("name")) is str:
                    add(member["name"], ("tools", i, "tools", j), member, "parameters", tool.get("name"))
        elif tool.get("type", "function") == "function" and type(tool.get("name")) is str:
            add(tool["name"], ("tools", i), tool, "parameters")
    return found


def request_changes(protocol: str, kind: str, client: Any, sent: Any) -> list[dict[str, Any]]:
    """What the proxy changed between the client's request and the one sent (module docstring)."""
    if type(client) is not dict or type(sent) is not dict:
        return []
    diff = Diff()
    if kind == "mitm" or protocol in SAME_FORMAT:
        diff.compare(client, sent, (), (), in_schema)
        return diff.out
    mine = client_tools(protocol, client)
    tools = sent.get("tools")
    for i, group in enumerate(tools if type(tools) is list else ()):
        decls = group.get("functionDeclarations") if type(group) is dict else None
        for j, decl in enumerate(decls if type(decls) is list else ()):
            if type(decl) is not dict or decl.get("name") not in mine:
                continue  # a tool of the proxy's own (a search, a hosted one): nothing to compare it with
            at, tool, schema_key, flat = mine[decl["name"]]
            b = ("tools", i, "functionDeclarations", j)
            if flat != decl["name"]:  # sanitized, or made unique: the calls come back under the client's name
                diff.add("changed", (*at, "name"), (*b, "name"), tool["name"])
            _field(diff, tool, decl, "description", "description", at, b)
            sent_key = "parametersJsonSchema" if "parametersJsonSchema" in decl else "parameters"
            _field(diff, tool, decl, schema_key, sent_key, at, b, schema=True)
    contents = sent.get("contents")
    for i, content in enumerate(contents if type(contents) is list else ()):
        parts = content.get("parts") if type(content) is dict else None
        for j, part in enumerate(parts if type(parts) is list else ()):
            if type(part) is dict and "thoughtSignature" in part:
                diff.add("added", None, ("contents", i, "parts", j, "thoughtSignature"))
    return diff.out


def _field(diff: Diff, tool: dict, decl: dict, key: str, sent_key: str, a: tuple, b: tuple,
           schema: bool = False) -> None:
    if key in tool and sent_key in decl:
        diff.compare(tool[key], decl[sent_key], (*a, key), (*b, sent_key), schema)
    elif key in tool and tool[key] not in (None, ""):
        diff.add("removed", (*a, key), None)
    elif sent_key in decl:
        diff.add("added", None, (*b, sent_key))


def answer_changes(protocol: str, kind: str, answer: Any, sent: Any) -> list[dict[str, Any]]:
    """What the proxy changed in a whole answer of the client's own format (Gemini's); nothing for
    another format's (a translation) or a stream's events (text)."""
    if (kind != "mitm" and protocol not in SAME_FORMAT) or type(answer) is not dict or type(sent) is not dict:
        return []
    diff = Diff()
    diff.compare(answer, sent, (), ())
    return diff.out


def changes(doc: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The marks of an exchange's document (ring.details): its last upstream call's, as the page shows."""
    protocol, kind = doc.get("protocol") or "", doc.get("kind") or ""
    up = doc.get("upstream") or []
    last = up[-1] if up and type(up[-1]) is dict else {}
    client = (doc.get("client_request") or {}).get("body")
    answer = (doc.get("client_answer") or {}).get("body")
    return {"request": request_changes(protocol, kind, client, last.get("request")),
            "answer": answer_changes(protocol, kind, last.get("answer"), answer) if not last.get("stream") else []}
