// Recomputes the fingerprints of catalog.yaml's suites with JavaScript's own
// JSON.stringify, written from docs/harness.md ("Suite fingerprint") independently of the Go code:
//   node stringify.js
// prints "<sha256>  <suite>" and the JSON of each; fingerprint_test.go pins the output.
const crypto = require("crypto");
const profiles = {
  agent: { id: "agent", model: "gpt-5.4", qualification: { source: "qualified_runner_profile", qualificationId: "codex:qualified-model" } },
  "agent-b": { id: "agent-b", model: "claude-sonnet-4-6 <&>", qualification: { source: "adapter_constant", qualificationId: "claude_local:default-model" } },
};
const tasks = {
  hello: { id: "hello", flow: "single_turn", expectedRunCount: 1, restartServerBeforeQuestionAnswer: false },
  resume: { id: "resume", flow: "question_resume_completion", expectedRunCount: 2, minimumExpectedRunCount: 1, restartServerBeforeQuestionAnswer: true },
};
const suites = [
  {
    id: "tricky",
    profiles: [profiles.agent, profiles["agent-b"]],
    environments: [{ id: "local", configurationKey: "default" }, { id: "daytona", configurationKey: "warm-reuse-v1" }],
    tasks: [tasks.hello, tasks.resume],
    excludedExecutionIds: ["tricky.agent.local.resume", "tricky.agent-b.local.hello"].slice().sort(),
    metadata: {
      zeta: "first",
      "10": "ten",
      "2": "two",
      "01": "zero-one",
      alpha: '<b>&amp;</b> "quoted" back\\slash',
      unicode: "é 漢字 😀 \u2028 \u2029 \x01 \t end",
      numbers: [0, -0.0, 1.5, 1e21, 1e-7, 123456789012345678, 0.1, 100, -3],
      nested: { b: 1, a: [true, false, null, { y: 2, x: 1 }] },
      empty: {},
      list: [],
    },
  },
  {
    id: "plain",
    profiles: [profiles["agent-b"]],
    environments: [{ id: "local", configurationKey: "default" }],
    tasks: [tasks.hello],
    excludedExecutionIds: [],
    metadata: null,
  },
];
for (const s of suites) {
  const json = JSON.stringify(s);
  console.log(crypto.createHash("sha256").update(json, "utf8").digest("hex") + "  " + s.id);
  console.log(json);
}
const models = [
  { rank: 1, id: "deepseek/deepseek-v4-flash-0731", name: "DeepSeek: V4 Flash <0731>", supportedParameters: ["max_tokens", "tool_choice", "tools"] },
  { rank: 2, id: "nvidia/nemotron-3-ultra-550b-a55b:free", name: "NVIDIA: Nemotron 3 Ultra (free) – “quotes”", supportedParameters: [] },
];
const mjson = JSON.stringify(models);
console.log(crypto.createHash("sha256").update(mjson, "utf8").digest("hex") + "  ranking contentHash");
console.log(mjson);
