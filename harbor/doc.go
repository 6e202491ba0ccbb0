// Package harbor reads Harbor task directories (the task format of Harbor and
// Terminal-Bench 2) so that `agentproof import harbor` can turn them into catalog
// cases (docs/own-tasks.md "Harbor tasks").
//
// A task directory holds task.toml (its configuration), instruction.md (the prompt),
// environment/Dockerfile (the image the agent works in), tests/test.sh (the verifier,
// which writes the reward to /logs/verifier/reward.txt or reward.json) and, optionally,
// solution/solve.sh (the reference solution). LoadTask reads one and refuses, naming
// the file and the field, whatever agentproof cannot carry out faithfully (a prebuilt
// image from a registry, a compose environment, GPUs, internet access, environment
// variables for the verifier or the solution, multi-step tasks, unknown keys). The
// directory is untrusted input: sizes are bounded and nothing is executed.
package harbor
