"""The sandbox of scripted custom tools: JavaScript (QuickJS) that orchestrates other tools.

A script's body gets `input` (the tool's arguments) and `rs`:

- `rs.callTool(tool, args)` / `rs.callTool("Name:version", tool, args)` calls a tool and returns
  `{ok, content, error}`: `content` is the tool's structured content, else its text parsed as
  JSON, else the text; `error` is `{code, message}` (code null for a tool's own error result)
  or null;
- `rs.callToolAsync(...)` (same arguments) starts a call and returns a handle at once;
  `rs.awaitPromises([handles])` returns their results in order (failures are `ok: false`);
- `rs.fail(message, data)` ends the run with an error result whose text is JSON
  `{"message", "data"}`, even if the script catches the error it throws.

The body's `return` value is the result: compact JSON text, and structured content when it is a
JSON object. An uncaught exception is an error result with its message. Only the tools listed in
the script's `tools` can be called: any other call throws inside the script. `ScriptLimits` says
what else holds: time, memory, stack, calls per run, nesting depth, result size, workers.
There is no event loop in a script's sandbox: promises and `async` functions never settle.

A code-mode program (`Script.kind == "program"`) is the body of an async function given `tools`:
`await tools.<name>(args)` gives the tool's content (as `rs.callTool` would) and throws on a failure,
calls not yet awaited run in parallel, and the prelude runs the promise jobs (`program_prelude`). Its
allow-list is None: the `Invoke` decides which tools it reaches. A call that needs the user first (a
credential asked for by elicitation) stops a run of either kind and reaches the caller.
"""

from apimcp.artifacts.scripting.host import Invoke
from apimcp.artifacts.scripting.limits import ScriptLimits
from apimcp.artifacts.scripting.runner import ScriptRunner
from apimcp.artifacts.scripting.script import Script, ScriptSpecError, ToolRef

__all__ = ["Invoke", "Script", "ScriptLimits", "ScriptRunner", "ScriptSpecError", "ToolRef"]
