"""The JavaScript that runs a script: it builds `rs`, compiles the body and reports how it ended.

It takes the host functions and inputs out of the global scope before any script code runs, so
that code (including code smuggled out of the body's function) can reach the host only through
`rs`. Python checks everything a host function receives: the prelude is a convenience layer, not
the security boundary. It answers one string: a letter saying how the script ended, then JSON.
"""

from __future__ import annotations

from typing import Final

READY: Final = "__apimcp_ready"
CALL: Final = "__apimcp_call"
START: Final = "__apimcp_start"
AWAIT: Final = "__apimcp_await"
FAIL: Final = "__apimcp_fail"
BODY: Final = "__apimcp_body"
INPUT: Final = "__apimcp_input"
MAX_CHARS: Final = "__apimcp_max_chars"

RETURNED: Final = "R"  # the JSON text of the returned value
THREW: Final = "T"  # a JSON string: String(the thrown value)
NOT_JSON: Final = "N"  # a JSON string: why the returned value could not be serialised
TOO_LARGE: Final = "B"  # the returned JSON text has more UTF-16 units than the limit has bytes
NOT_COMPILED: Final = "C"  # a JSON string: the syntax error, with its line in the body
BROKEN: Final = "X"  # a JSON string: the sandbox itself could not start

# Longest thrown message the prelude hands over; Python keeps 2000 characters of it.
MESSAGE_UNITS: Final = 4100

SOURCE: Final = f"""
(() => {{
  "use strict";
  const take = (name) => {{ const value = globalThis[name]; delete globalThis[name]; return value; }};
  const ready = take("{READY}"), hostCall = take("{CALL}"), hostStart = take("{START}");
  const hostAwait = take("{AWAIT}"), hostFail = take("{FAIL}");
  const body = take("{BODY}"), inputText = take("{INPUT}"), maxChars = take("{MAX_CHARS}");
  // Intrinsics are captured before script code can replace them.
  const {{ stringify, parse }} = JSON, {{ apply }} = Reflect, {{ isArray }} = Array, {{ freeze }} = Object;
  const toSource = Function.prototype.toString, FunctionC = Function, StringC = String;
  const ErrorC = Error, TypeErrorC = TypeError, RangeErrorC = RangeError, WeakMapC = WeakMap;
  const weakGet = WeakMapC.prototype.get, weakSet = WeakMapC.prototype.set, join = Array.prototype.join;
  // QuickJS-ng builds long concatenations as ropes, which the binding cannot hand to Python: the
  // answer is joined into a flat string instead.
  const end = (kind, text) => apply(join, [kind, text], [""]);

  const describe = (error) => {{
    try {{ return StringC(error).slice(0, {MESSAGE_UNITS}); }} catch (_) {{ return "uncaught exception"; }}
  }};
  try {{ ready(); }} catch (error) {{ return end("{BROKEN}", stringify(describe(error))); }}

  const send = (what, value) => {{
    const text = stringify(value);
    if (text.length > maxChars) throw new RangeErrorC(what + " exceed " + maxChars + " bytes of JSON");
    return text;
  }};
  const answer = (text) => {{  // host answers are [0, value] or [1, message to throw]
    const reply = parse(text);
    if (reply[0] === 0) return reply[1];
    throw new ErrorC(reply[1]);
  }};
  // (tool, args) or ("Name:version", tool, args): a string second argument names a service.
  const request = (list) => {{
    const named = typeof list[1] === "string";
    const args = named ? list[2] : list[1];
    return send("the arguments of a tool call", [named ? list[0] : null, named ? list[1] : list[0],
                                                  args === undefined ? {{}} : args]);
  }};
  const handles = new WeakMapC();
  const rs = freeze({{
    callTool: (...list) => answer(hostCall(request(list))),
    callToolAsync: (...list) => {{
      const id = answer(hostStart(request(list)));
      const handle = freeze({{}});
      apply(weakSet, handles, [handle, id]);
      return handle;
    }},
    awaitPromises: (list) => {{
      if (!isArray(list)) throw new TypeErrorC("rs.awaitPromises expects an array of rs.callToolAsync handles");
      const ids = [];
      for (let i = 0; i < list.length; i++) {{
        const id = apply(weakGet, handles, [list[i]]);
        if (id === undefined) {{
          throw new TypeErrorC("rs.awaitPromises: item " + i + " is not an rs.callToolAsync handle");
        }}
        ids.push(id);
      }}
      return answer(hostAwait(stringify(ids)));
    }},
    fail: (message, data) => {{
      const text = message === undefined ? "" : StringC(message);
      answer(hostFail(send("the data of rs.fail", [text, data === undefined ? null : data])));
      throw new ErrorC(text);  // the run has failed whatever the script does with this error
    }},
  }});

  let script;
  try {{
    script = new FunctionC("input", "rs", body);
  }} catch (error) {{
    const at = /<input>:(\\d+):(\\d+)/.exec(StringC(error && error.stack));
    const where = at && at[1] > 2 ? " (line " + (at[1] - 2) + ", column " + at[2] + ")" : "";
    return end("{NOT_COMPILED}", stringify(describe(error) + where));
  }}
  // QuickJS's Function constructor parses its wrapper and body as one text, so a body that closes
  // the wrapper yields some other function: its source text must be exactly wrapper + body.
  let source = null;
  try {{ source = apply(toSource, script, []); }} catch (_) {{}}
  if (source !== "function anonymous(input,rs\\n) {{\\n" + body + "\\n}}") {{
    return end("{NOT_COMPILED}", stringify("the script closes the function its body is wrapped in"));
  }}

  let value;
  try {{
    value = script(parse(inputText), rs);
  }} catch (error) {{
    return end("{THREW}", stringify(describe(error)));
  }}
  let text;
  try {{
    text = stringify(value);
  }} catch (error) {{
    return end("{NOT_JSON}", stringify(describe(error)));
  }}
  if (text === undefined) text = "null";
  if (text.length > maxChars) return "{TOO_LARGE}";  // never copied out of the engine
  return end("{RETURNED}", text);
}})()
"""
