#!/usr/bin/env python3
"""A minimal agentproof `exec` agent: the whole agent protocol in one file.

agentproof starts this program once per run, with no shell, in the run's workspace,
with an explicit environment (docs/agent-protocol.md):

  AGENTPROOF_API_URL          base URL of the agent API for this run's company
  AGENTPROOF_RUN_TOKEN        bearer token of this run (valid while the run runs)
  AGENTPROOF_RUN_ID           the run to carry out
  AGENTPROOF_WORKSPACE        the run's workspace (also the working directory)
  AGENTPROOF_AGENT_STATE_DIR  a private directory that outlives runs (also HOME)

One run: read the run context, report progress, do the task, post the result and the
terminal state as events, complete the run, exit 0. This agent has no model: it does
the one kind of task it understands ("Post exactly the text X ... then mark the task
done", the message-marker case) and says so on any other. A real agent puts its model
where `decide` is.

Options (from the profile's driverConfig.args):
  --skip-complete   do the work but exit 0 without completing the run, to show what
                    agentproof reports for an agent that forgets the last call.

Python 3.8+, standard library only.
"""

import json
import os
import re
import sys
import time
import urllib.error
import urllib.request
from datetime import datetime, timezone

API = os.environ["AGENTPROOF_API_URL"].rstrip("/")
TOKEN = os.environ["AGENTPROOF_RUN_TOKEN"]
RUN = os.environ["AGENTPROOF_RUN_ID"]
SOURCE = "example-exec-agent"  # our PRP source instance id


class APIError(Exception):
    """An error answer of the agent API: {code, message, retryable}."""

    def __init__(self, status, body):
        self.status = status
        self.code = body.get("code", "")
        self.retryable = bool(body.get("retryable"))
        super().__init__("HTTP %d %s: %s" % (status, self.code, body.get("message", "")))


def call(method, path, body=None, attempts=4):
    """Send one request to the agent API and return the decoded JSON answer (None for
    204). A retryable error (HTTP 503, "retryable": true) is retried with the same body:
    commands, events and the completion are idempotent, so a retry never doubles work."""
    data = None if body is None else json.dumps(body).encode()
    for attempt in range(attempts):
        req = urllib.request.Request(API + path, data=data, method=method)
        req.add_header("Authorization", "Bearer " + TOKEN)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                raw = resp.read()
                return json.loads(raw) if raw else None
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                err = APIError(e.code, json.loads(raw))
            except ValueError:
                err = APIError(e.code, {"message": raw.decode(errors="replace")})
            if not err.retryable or attempt == attempts - 1:
                raise err
        time.sleep(0.05 * (attempt + 1))


def command(key, kind, **fields):
    """Apply one semantic command (POST /commands) and return its CommandResult."""
    return call("POST", "/commands", {"runId": RUN, "idempotencyKey": key, "command": dict(kind=kind, **fields)})


def ref(result, prefix):
    """The id of the first entity ref "<prefix>:<id>" of a CommandResult."""
    for r in result["entityRefs"]:
        if r.startswith(prefix + ":"):
            return r[len(prefix) + 1:]
    return None


def event(seq, event_type, payload):
    """Append one PRP event of this run (POST /events)."""
    call("POST", "/events", {
        "schema": "paperclip.prp.event.v1",
        "sourceEventId": "%s:%s:%d" % (SOURCE, RUN, seq),
        "sourceSeq": seq,
        "sourceInstanceId": SOURCE,
        "sourceKind": "runner",
        "runId": RUN,
        "turnId": RUN + ":turn-1",
        "eventType": event_type,
        "schemaVersion": 1,
        "priority": 0 if event_type == "run.terminal" else 1,
        "emittedAt": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z",
        "payload": payload,
    })


def decide(task):
    """The agent's "model": the text the task asks to post, or None."""
    m = re.search(r"Post exactly the text (\S+)", task.get("description") or "")
    return m.group(1) if m else None


def main():
    skip_complete = "--skip-complete" in sys.argv[1:]

    # 1. The run context: the company, this agent, the active task, why it was woken.
    ctx = call("GET", "/runs/%s/context" % RUN)
    task = ctx["activeTask"]
    print("run %s: task %s %r, woken by %s" % (RUN, task["identifier"], task["title"], ctx["wake"]["reason"]))

    # 2. Progress: a comment on the task.
    command("progress-1", "report_progress", body="Reading the task.")

    # 3. The work.
    text = decide(task)
    if text is not None:
        done = command("finish-1", "finish_task", summary=text)  # the task is done
        disposition, summary = "done", text
    else:
        done = command("review-1", "request_review", summary="I do not know how to do this task.")
        disposition, summary = "needs_review", "I do not know how to do this task."
    comment = ref(done, "comment")  # the comment that is the run's message to the human

    if skip_complete:
        print("--skip-complete: exiting without completing the run")
        return 0

    # 4. The result and the terminal state, first as events of the run ...
    result = {
        "reportedWorkDisposition": disposition,
        "summary": summary,
        "completionClaim": {
            "contractRevision": 1,
            "objectiveSatisfied": disposition == "done",
            "criteria": [{"criterionId": "task-instruction", "status": "satisfied" if disposition == "done" else "unknown", "evidenceRefs": ["run:" + RUN]}],
            "remainingWork": [],
        },
        "evidence": [{"kind": "run", "ref": "run:" + RUN}],
        "verification": [{"commandOrCheck": "read the task instruction", "status": "passed"}],
        "attentionRequests": [],
        "artifacts": [],
        "presentationDecision": {"commentId": comment},
    }
    terminal = {"turnTerminalState": "completed", "runTerminalState": "succeeded", "reportedWorkDisposition": disposition}
    event(1, "run.result.proposed", result)
    event(2, "run.terminal", terminal)

    # 5. ... then the completion, which reconciles the task and ends the run (and this
    # run's token). An identical retry of it is accepted even after the run ended.
    call("POST", "/complete", {
        "result": result,
        "terminal": terminal,
        "turnId": RUN + ":turn-1",
        "callerResultId": RUN + ":result",
        "callerDedupeKey": RUN + ":complete",
    })
    print("run %s completed: %s" % (RUN, disposition))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except APIError as e:
        # Exit non-zero: the runner completes the run as failed and keeps this output.
        print("agent API error: %s" % e, file=sys.stderr)
        sys.exit(1)
