package trajectory

import (
	"slices"

	"github.com/agentproof/agentproof/agent/driver"
	"github.com/agentproof/agentproof/controlplane"
)

// Input is what a converter reads of one run:
//
//   - RunID: the control plane's run id; Driver: the run's driver (as the heartbeat
//     runner recorded it; the zero Name for none); Agent: the agent system (Version "" when unknown).
//   - Stream: the bytes of the run's evidence file the Format reads (redacted and
//     guarded before it gets here: the converter never sees more than the evidence
//     holds); Cut says that copy is bounded and was cut at its limit, or that the
//     process's output exceeded its bound (the stream's tail is missing).
//   - State: the control plane's state after the attempt (snapshots/api-state.json),
//     for the board record; nil when it could not be read.
//   - Stdout: the run's kept standard output, for formats whose agent writes no
//     stream of its own (a fixture, a built-in agent); nil for none.
type Input struct {
	RunID  string
	Driver driver.Name
	Agent  Agent
	Stream []byte
	Cut    bool
	State  *controlplane.State
	Stdout []byte
}

// Format is one kind of raw stream a trajectory can be built from:
//
//   - Name names the stream in the trajectory (Trajectory.Format) and in result.json.
//   - File is the name of the run's evidence file it reads ("events.jsonl",
//     "acp-turn.jsonl"); "" for a format that reads the control plane's record.
//   - Accepts reports whether the format applies to a run of the driver.
//   - Convert builds the trajectory. It never fails and never panics on any input:
//     what it cannot read is a gap.
//
// Adding a stream is one file: a Format registered from that file's init (see
// codex.go); Select picks it for the runs it accepts.
type Format struct {
	Name    string
	File    string
	Accepts func(driver.Name) bool
	Convert func(Input) Trajectory
}

// formats are the registered formats, in registration order (file order: Go runs the
// init functions of a package's files in the order the files are presented, by name).
var formats []Format

// register adds f; every file of a format calls it from init.
func register(f Format) { formats = append(formats, f) }

// Formats returns the registered formats (a copy), stream formats first.
func Formats() []Format {
	out := slices.Clone(formats)
	slices.SortStableFunc(out, func(a, b Format) int {
		switch {
		case a.File != "" && b.File == "":
			return -1
		case a.File == "" && b.File != "":
			return 1
		}
		return 0
	})
	return out
}

// Select returns the format to read a run of driver by, given the names of the run's
// evidence files: the first stream format that accepts the driver and whose file the
// run left, else the first record format (File "") that accepts it. ok is false when
// no format applies.
func Select(d driver.Name, files []string) (f Format, ok bool) {
	for _, f := range Formats() {
		if !f.Accepts(d) {
			continue
		}
		if f.File == "" || slices.Contains(files, f.File) {
			return f, true
		}
	}
	return Format{}, false
}

// Convert builds the trajectory of in with the format named name; ok is false when no
// format has that name.
func Convert(name string, in Input) (t Trajectory, ok bool) {
	for _, f := range formats {
		if f.Name == name {
			return f.Convert(in), true
		}
	}
	return Trajectory{}, false
}
