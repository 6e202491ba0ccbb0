package initproc

import (
	"os"
	"slices"
	"strconv"
	"unicode/utf8"
)

// StatusSchema names the exit report's version.
const StatusSchema = "agentproof.sandbox-init.v1"

// Status is the exit report init writes on its status fd (a JSON object; the
// controller decodes it with encoding/json).
type Status struct {
	Schema      string           `json:"schema"`
	PID         int              `json:"pid"`
	Exited      bool             `json:"exited"`
	ExitCode    int              `json:"exitCode"`
	Signal      string           `json:"signal,omitempty"`
	Error       string           `json:"error,omitempty"`
	Connections map[string]int64 `json:"connections,omitempty"`
	// Counters are the cgroup counters init read at the agent's end when asked
	// (--counters; CounterOOMKills, CounterForkRefusals), for a provider whose host
	// cannot read them after the exit (the container's engine removes its cgroup).
	Counters map[string]int64 `json:"counters,omitempty"`
}

// AppendJSON appends s as encoding/json marshals it (the fields in order, empty
// omitempty fields left out, map keys sorted, invalid UTF-8 as U+FFFD) to b.
func (s Status) AppendJSON(b []byte) []byte {
	b = append(b, `{"schema":`...)
	b = appendString(b, s.Schema)
	b = append(b, `,"pid":`...)
	b = strconv.AppendInt(b, int64(s.PID), 10)
	b = append(b, `,"exited":`...)
	b = strconv.AppendBool(b, s.Exited)
	b = append(b, `,"exitCode":`...)
	b = strconv.AppendInt(b, int64(s.ExitCode), 10)
	if s.Signal != "" {
		b = append(b, `,"signal":`...)
		b = appendString(b, s.Signal)
	}
	if s.Error != "" {
		b = append(b, `,"error":`...)
		b = appendString(b, s.Error)
	}
	for _, m := range []struct {
		key    string
		values map[string]int64
	}{{"connections", s.Connections}, {"counters", s.Counters}} {
		if len(m.values) == 0 {
			continue
		}
		b = append(b, `,"`+m.key+`":{`...)
		keys := make([]string, 0, len(m.values))
		for k := range m.values {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			b = strconv.AppendInt(b, m.values[k], 10)
		}
		b = append(b, '}')
	}
	return append(b, '}')
}

// appendString appends s as a JSON string: quote, backslash and control characters
// escaped, an invalid UTF-8 byte as \ufffd.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

// Counter names of Status.Counters.
const (
	// CounterOOMKills counts the processes the kernel killed at the memory limit.
	CounterOOMKills = "oomKills"
	// CounterForkRefusals counts the forks the pids limit refused.
	CounterForkRefusals = "forkRefusals"
)

// OwnCgroupCounters reads, from init's own view of /sys/fs/cgroup (a container's: its
// own cgroups, mounted read-only), the memory cgroup's OOM kills and the pids cgroup's
// refused forks: cgroup v2's memory.events and pids.events at the root, or v1's
// memory/memory.oom_control and pids/pids.events. A counter it cannot read is absent.
func OwnCgroupCounters() map[string]int64 {
	out := map[string]int64{}
	for _, c := range []struct{ name, file, key string }{
		{CounterOOMKills, "/sys/fs/cgroup/memory.events", "oom_kill"},
		{CounterOOMKills, "/sys/fs/cgroup/memory/memory.oom_control", "oom_kill"},
		{CounterForkRefusals, "/sys/fs/cgroup/pids.events", "max"},
		{CounterForkRefusals, "/sys/fs/cgroup/pids/pids.events", "max"},
	} {
		if _, done := out[c.name]; done {
			continue
		}
		if n, ok := ReadCounter(c.file, c.key); ok {
			out[c.name] = n
		}
	}
	return out
}

// ReadCounter reads a "key value" line of a cgroup file (memory.events, pids.events,
// memory.oom_control); ok is false when the file or the key is missing.
func ReadCounter(path, key string) (int64, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	for _, line := range lines(string(data)) {
		k, v, _ := cut(line, ' ')
		if k == key {
			n, err := strconv.ParseInt(trimBlank(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}
