// Package scriptedmodel is the scripted model: a local HTTP server that speaks the model
// APIs real agent CLIs use — OpenAI Responses (Codex), OpenAI Chat Completions and
// Anthropic Messages (OpenCode, Claude Code), and the Gemini API (Gemini CLI) — and answers each request from a script
// instead of a language model, so that unmodified CLIs run offline and deterministically.
//
// Steering (docs/pi.md): a call step with hold_ms is held mid-call — its stream sends the
// first frame, then keep-alive comments — until the run's hold is released
// (Server.Release, RunSet.Release: calls of the harness, never an HTTP route the agent
// could reach) or hold_ms passes, so that a
// turn stays active while the harness delivers a steering message; an answer_match step
// answers with what its expression matches in the latest input (the steering message
// the agent delivered with the tool result) and refuses the request when nothing
// matches.
//
// Reactive steps: a step may carry a branch condition (`when: {toolResult: denied,
// step: 1}`): the tool result the agent's runtime sent back for a call (the previous
// one, or the call of the named step) is classified as approved, denied, error or
// cancelled (ClassifyToolResult: the wordings of the pinned CLIs, docs/acp.md "What a
// runner tells its model"), and the step plays when the kind matches, else its `else`
// step; without an else the request is refused naming the step, the condition and
// what was observed. Every request's log line carries its latest tool result as
// classified and every condition evaluated (matched or not), so a condition that never
// held is evidence, never a silent default.
//
// A Script is a sequence of steps, one per assistant turn: call a tool by role ("shell";
// "write_file", the agent's own file-writing tool, which asks an ACP client's
// permission; or a semantic tool such as finish_task, matched against the request's own tool list by
// name suffix so MCP-prefixed names fit) or answer text. The step is picked from the
// conversation the request carries (its number of assistant turns), so the server keeps
// no per-session state and a retried request gets the same answer. A request that does
// not fit the script gets HTTP 400 with a JSON error naming the step; the CLIs then stop
// with exit 1. Every request is logged as one JSON line (headers and body redacted with
// package redact) and every response carries token usage.
//
// Streams follow each client's framing exactly: Responses and
// Messages events carry an `event:` line whose name equals the "type" inside `data:`,
// Chat Completions chunks are data-only and end with `data: [DONE]`. Options add the
// adversarial framings a real provider may use (frames split into 1–7-byte writes; a held first frame
// behind `: keepalive` comments). ReadEvents is the matching reader, buffering across
// reads and decoding UTF-8 only on whole lines.
package scriptedmodel
