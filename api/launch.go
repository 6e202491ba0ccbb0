package api

// LaunchFacts is what the heartbeat runner observed launching one run's agent process
// (docs/ARCHITECTURE.md "Observed facts"), recorded in HeartbeatRun.Launch. Matchers
// and the profile's runtime metadata check grade these facts, never the catalog's
// declarations:
//
//   - Driver: the driver the runner launched (the agent's adapterConfig driver);
//     AdapterType: the adapter kind that driver is (fixture, agentproof_builtin,
//     codex_local, opencode_local, claude_local, exec); Provider: who served the model
//     ("agentproof" for agents without one, "scripted" for the attempt's scripted model
//     on a loopback address, else the host of the live provider's base URL).
//   - CLIName, CLIVersion: the agent CLI's name and its version (major.minor.patch);
//     VersionSource says where the version was read: the package.json of the npm
//     package that ships the binary, found next to or above it ("package.json of
//     <name>: <version as written>"), or, when there is none, "--version": the first
//     version number the binary printed for `<binary> --version`, run bounded with an
//     environment of its own. The binary's SHA-256 pins the file itself.
//   - Binary: the absolute path of the executable launched; BinarySHA256 the SHA-256
//     (lower-case hex) of the file opened before the launch.
//   - Argv: the argv shape: argv[0]'s base name, flags kept up to "=", every other
//     argument replaced by "<value>", so that no secret or prompt text is stored.
//   - RuntimeMode: "native" (the runner opens every run through the native run
//     protocol: a checkout with a session, native events, a native completion).
//   - EnvironmentID: the control-plane environment the run executed in;
//     ExecutionTarget its kind as a target: local (the only kind this runner serves).
//   - PID: the process id; ProcessStartTicks: its start time in clock ticks since boot
//     (/proc/<pid>/stat field 22), read right after the start, so that a pid can be
//     told from a later process reusing it.
//   - Problems: facts that could not be observed, with why (the version probe timed
//     out, /proc could not be read).
type LaunchFacts struct {
	Driver            string   `json:"driver"`
	AdapterType       string   `json:"adapterType"`
	Provider          string   `json:"provider"`
	CLIName           string   `json:"cliName,omitempty"`
	CLIVersion        string   `json:"cliVersion,omitempty"`
	VersionSource     string   `json:"versionSource,omitempty"`
	Binary            string   `json:"binary"`
	BinarySHA256      string   `json:"binarySha256,omitempty"`
	Argv              []string `json:"argv"`
	RuntimeMode       string   `json:"runtimeMode"`
	EnvironmentID     string   `json:"environmentId"`
	ExecutionTarget   string   `json:"executionTarget"`
	PID               int      `json:"pid,omitempty"`
	ProcessStartTicks uint64   `json:"processStartTicks,omitempty"`
	Problems          []string `json:"problems,omitempty"`
}
