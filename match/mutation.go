package match

import (
	"fmt"
	"strings"
)

// KindNoMutation grades what the workspace watcher observed while the agent could act
// (Observation.Watches; docs/acp.md "Observing nothing happened"): it passes when every
// run was watched completely and no event touched path (the workspace-relative file or
// directory, or anything below it) — no create, write, move or delete, not even one
// undone before the end. It fails when an event touched path (the events are the
// observed value), and is not reached when a run was not watched or its watch is
// incomplete (the kernel's queue overflowed, events were dropped, a directory could not
// be watched) and no event touched path. Beside file_absent it is the oracle of a write
// that must not happen: file_absent looks once at the end, this one saw every step.
const KindNoMutation Kind = "no_mutation"

// RunWatch is one run's workspace watch: whether a watcher ran (Observed), whether its
// record is complete, and the mutations it saw in order.
type RunWatch struct {
	RunID    string       `json:"runId,omitempty"`
	Observed bool         `json:"observed"`
	Complete bool         `json:"complete"`
	Events   []WatchEvent `json:"events,omitempty"`
}

// WatchEvent is one observed mutation: op (create, write, close_write, move_from,
// move_to, delete), the workspace-relative, slash-separated path and when the watcher
// saw it (RFC 3339; "" when not recorded).
type WatchEvent struct {
	Op   string `json:"op"`
	Path string `json:"path"`
	At   string `json:"at,omitempty"`
}

// evalNoMutation looks for events on c.file or below it in every run's watch.
func (c *compiled) evalNoMutation(obs *Observation) result {
	var touched []map[string]string
	for i, w := range obs.Watches {
		for _, e := range w.Events {
			if under(e.Path, c.file) {
				touched = append(touched, map[string]string{"run": fmt.Sprint(i + 1), "op": e.Op, "path": e.Path})
			}
		}
	}
	if len(touched) > 0 {
		return result{observed: touched}
	}
	if missing := watchGap(obs); missing != "" {
		return result{missing: missing}
	}
	return result{passed: true, observed: []map[string]string{}}
}

// watchGap says why the runs' watches cannot be trusted to hold every event: no run
// was watched, or the first run whose workspace was not watched or whose watch is
// incomplete; "" when they can.
func watchGap(obs *Observation) string {
	if !obs.HasWatches || len(obs.Watches) == 0 {
		return "no run's workspace was watched"
	}
	for i, w := range obs.Watches {
		switch {
		case !w.Observed:
			return fmt.Sprintf("run %d's workspace was not watched", i+1)
		case !w.Complete:
			return fmt.Sprintf("run %d's workspace watch is incomplete (events lost or a directory unwatched)", i+1)
		}
	}
	return ""
}

// under reports whether a watched path is file or below it.
func under(path, file string) bool { return path == file || strings.HasPrefix(path, file+"/") }
