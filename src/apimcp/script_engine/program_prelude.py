"""The JavaScript that runs a code-mode program: the body of an async function given `tools`.

`tools.<name>(args)` starts a call of the tool at once (so calls not yet awaited run in parallel) and returns a
promise of its structured content (else its text, parsed as JSON when it is JSON); a tool error rejects it
with an Error naming the tool, whose `line` is where the program called it. There is no event loop in the
engine: this prelude is one. It starts the program, then runs the promise jobs (`drain`, a function of the
script process itself), and while the program waits it asks the host for the next calls to end (`next`),
settles their promises and runs the jobs again, until the program's promise settles.

As for scripts (`prelude.py`), the host functions and inputs are taken out of the global scope before the
program runs, and everything a host function receives is checked in Python: this is a convenience layer, not
the security boundary. Its functions are named `apimcp$...` so that a stack's first frame of the program can be
told from the prelude's. It answers one string: a letter saying how the program ended, then JSON.
"""

from __future__ import annotations

from typing import Final

from apimcp.script_engine.prelude import (
    BODY,
    BROKEN,
    INPUT,
    MAX_CHARS,
    MESSAGE_UNITS,
    NOT_COMPILED,
    NOT_JSON,
    READY,
    RETURNED,
    START,
    TOO_LARGE,
)

NEXT: Final = "__apimcp_next"
DRAIN: Final = "__apimcp_drain"

FAILED: Final = "L"  # JSON [line or null, message]: the program's promise was rejected
STALLED: Final = "S"  # the program waits for a promise that nothing can settle (no tool call is under way)

__all__ = [
    "BROKEN", "DRAIN", "FAILED", "NEXT", "NOT_COMPILED", "NOT_JSON", "RETURNED", "SOURCE", "STALLED", "TOO_LARGE",
]  # fmt: skip

SOURCE: Final = f"""
(() => {{
  "use strict";
  const take = (name) => {{ const value = globalThis[name]; delete globalThis[name]; return value; }};
  const ready = take("{READY}"), hostStart = take("{START}"), hostNext = take("{NEXT}"), drain = take("{DRAIN}");
  const body = take("{BODY}"), maxChars = take("{MAX_CHARS}");
  take("{INPUT}");
  // Intrinsics are captured before program code can replace them.
  const {{ stringify, parse }} = JSON, {{ apply }} = Reflect, {{ freeze, create }} = Object;
  const toSource = Function.prototype.toString, StringC = String, ErrorC = Error, RangeErrorC = RangeError;
  const PromiseC = Promise, ProxyC = Proxy, MapC = Map, then = Promise.prototype.then;
  const mapGet = MapC.prototype.get, mapSet = MapC.prototype.set, mapDelete = MapC.prototype.delete;
  const mapForEach = MapC.prototype.forEach, mapSize = Object.getOwnPropertyDescriptor(MapC.prototype, "size").get;
  const exec = RegExp.prototype.exec, join = Array.prototype.join, push = Array.prototype.push;
  const AsyncFunctionC = (async function () {{}}).constructor;
  const end = (kind, text) => apply(join, [kind, text], [""]);

  const apimcp$describe = (error) => {{
    try {{ return StringC(error).slice(0, {MESSAGE_UNITS}); }} catch (_) {{ return "uncaught exception"; }}
  }};
  try {{ ready(); }} catch (error) {{ return end("{BROKEN}", stringify(apimcp$describe(error))); }}

  // The program's source is its function's: line 3 of the text the constructor parses is its line 1.
  const apimcp$lineOf = (stack) => {{
    if (typeof stack !== "string") return null;
    const frame = /at ([^ ]*) \\(<input>:(\\d+):\\d+\\)/g;
    let found;
    while ((found = apply(exec, frame, [stack])) !== null) {{
      if (found[1] !== "<eval>" && apply(exec, /^apimcp\\$/, [found[1]]) === null) return found[2] - 2;
    }}
    return null;
  }};
  const apimcp$send = (value) => {{
    const text = stringify(value);
    if (text.length > maxChars) {{
      throw new RangeErrorC("the arguments of a tool call exceed " + maxChars + " bytes of JSON");
    }}
    return text;
  }};
  const apimcp$answer = (text) => {{  // host answers are [0, value] or [1, message to throw]
    const reply = parse(text);
    if (reply[0] === 0) return reply[1];
    throw new ErrorC(reply[1]);
  }};

  const pending = new MapC();  // call handle -> [resolve, reject, tool name, line of the call]
  const apimcp$call = (name, args) => {{
    const line = apimcp$lineOf(new ErrorC().stack);
    const handle = apimcp$answer(hostStart(apimcp$send([null, name, args === undefined ? {{}} : args])));
    return new PromiseC((resolve, reject) => {{ apply(mapSet, pending, [handle, [resolve, reject, name, line]]); }});
  }};
  const apimcp$failure = (name, line, error) => {{
    const failure = new ErrorC("tools." + name + " failed: " + (error && error.message));
    failure.tool = name;
    failure.code = error ? error.code : null;
    failure.line = line;
    return failure;
  }};
  const tools = new ProxyC(create(null), {{
    // `then` stays undefined: awaiting `tools` itself must not look like a call
    get: (_, name) => {{
      if (typeof name !== "string" || name === "then") return undefined;
      const apimcp$tool = (args) => apimcp$call(name, args);  // named: its frame is the prelude's
      return apimcp$tool;
    }},
  }});

  let program;
  try {{
    program = new AsyncFunctionC("tools", body);
  }} catch (error) {{
    const at = /<input>:(\\d+):(\\d+)/.exec(StringC(error && error.stack));
    const where = at && at[1] > 2 ? " (line " + (at[1] - 2) + ", column " + at[2] + ")" : "";
    return end("{NOT_COMPILED}", stringify(apimcp$describe(error) + where));
  }}
  // The constructor parses its wrapper and body as one text: a body that closes the wrapper yields another function.
  let source = null;
  try {{ source = apply(toSource, program, []); }} catch (_) {{}}
  if (source !== "async function anonymous(tools\\n) {{\\n" + body + "\\n}}") {{
    return end("{NOT_COMPILED}", stringify("the program closes the function its body is wrapped in"));
  }}

  let state = 0, value, failure;
  apply(then, program(tools), [(v) => {{ state = 1; value = v; }}, (e) => {{ state = 2; failure = e; }}]);
  for (;;) {{
    drain("");
    if (state !== 0) break;
    if (apply(mapSize, pending, []) === 0) return end("{STALLED}", "");
    const handles = [];
    apply(mapForEach, pending, [(_, handle) => {{ apply(push, handles, [handle]); }}]);
    let ended;
    try {{
      ended = apimcp$answer(hostNext(stringify(handles)));
    }} catch (error) {{  // the run was stopped: its deadline
      return end("{FAILED}", stringify([null, apimcp$describe(error.message)]));
    }}
    for (let i = 0; i < ended.length; i++) {{
      const handle = ended[i][0], outcome = ended[i][1], call = apply(mapGet, pending, [handle]);
      apply(mapDelete, pending, [handle]);
      if (outcome.ok) call[0](outcome.content);
      else call[1](apimcp$failure(call[2], call[3], outcome.error));
    }}
  }}
  if (state === 2) {{
    let line = null;
    try {{
      const own = failure instanceof ErrorC && typeof failure.line === "number";  // a tool failed: where called
      line = own ? failure.line : apimcp$lineOf(failure.stack);
    }} catch (_) {{}}
    let message = apimcp$describe(failure);
    if (message.slice(0, 7) === "Error: ") message = message.slice(7);
    return end("{FAILED}", stringify([line, message]));
  }}
  let text;
  try {{
    text = stringify(value);
  }} catch (error) {{
    return end("{NOT_JSON}", stringify(apimcp$describe(error)));
  }}
  if (text === undefined) text = "null";
  if (text.length > maxChars) return "{TOO_LARGE}";  // never copied out of the engine
  return end("{RETURNED}", text);
}})()
"""
