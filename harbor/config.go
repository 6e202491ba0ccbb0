package harbor

import (
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/BurntSushi/toml"
)

// ConfigFile is the name of a task's configuration file.
const ConfigFile = "task.toml"

// Config is what agentproof takes from a task.toml. Durations are in seconds (Harbor's
// timeout_sec fields), sizes in MiB; zero means the task did not say.
//
//   - Version: `version` or `schema_version`, as written ("" when absent).
//   - Name, Description: [task] name and description.
//   - AgentTimeoutSec, VerifierTimeoutSec: [agent] and [verifier] timeout_sec.
//   - BuildTimeoutSec, CPUs, MemoryMB, StorageMB: [environment] build_timeout_sec, cpus,
//     memory_mb (or the older memory = "4G") and storage_mb (or storage).
//   - Metadata: [metadata], free-form (kept as the suite's definition metadata).
type Config struct {
	Version            string
	Name               string
	Description        string
	AgentTimeoutSec    float64
	VerifierTimeoutSec float64
	BuildTimeoutSec    float64
	CPUs               int
	MemoryMB           int
	StorageMB          int
	Metadata           map[string]any
	// Offline: the task declares that it runs without the network ([environment]
	// allow_internet = false or network_mode = "no-network"). A task that does not
	// relies on Harbor's default, the network (its test.sh may install its tools
	// from the internet), which the agent and the verifier never have here.
	Offline bool
}

// Problem is one thing wrong with a task directory: the file (relative to the task
// directory), the field in it ("" for the file as a whole) and what is wrong.
type Problem struct {
	File    string
	Field   string
	Message string
}

func (p Problem) String() string {
	if p.Field == "" {
		return p.File + ": " + p.Message
	}
	return p.File + ": " + p.Field + ": " + p.Message
}

// Problems is the error of a task directory that cannot be imported: every problem
// found, in file and field order. Dir names the task directory.
type Problems struct {
	Dir  string
	List []Problem
}

func (e *Problems) Error() string {
	lines := make([]string, len(e.List))
	for i, p := range e.List {
		lines[i] = e.Dir + "/" + p.String()
	}
	return strings.Join(lines, "\n")
}

// Bounds of the configuration's numbers: a timeout of at most a day, at most 64 CPUs,
// at most 1 TiB of memory or storage.
const (
	maxTimeoutSec = 86400
	maxCPUs       = 64
	maxSizeMB     = 1 << 20
	maxConfig     = 64 << 10
)

// configParser collects the problems of one task.toml.
type configParser struct {
	cfg      Config
	problems []Problem
}

func (p *configParser) add(field, format string, args ...any) {
	p.problems = append(p.problems, Problem{File: ConfigFile, Field: field, Message: fmt.Sprintf(format, args...)})
}

// ParseConfig parses the bytes of a task.toml. It returns the problems as a slice,
// empty when the configuration is one agentproof can carry out: every key it does
// not know, and every value it cannot honour, is a problem naming the field.
func ParseConfig(data []byte) (Config, []Problem) {
	p := &configParser{}
	if len(data) > maxConfig {
		p.add("", "is %d bytes, more than the %d a task configuration may have", len(data), maxConfig)
		return p.cfg, p.problems
	}
	var raw map[string]any
	if _, err := toml.Decode(string(data), &raw); err != nil {
		p.add("", "is not valid TOML: %s", oneLine(err.Error()))
		return p.cfg, p.problems
	}
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		p.top(k, raw[k])
	}
	sort.SliceStable(p.problems, func(i, j int) bool { return p.problems[i].Field < p.problems[j].Field })
	return p.cfg, p.problems
}

// top handles one top-level key of task.toml.
func (p *configParser) top(k string, v any) {
	switch k {
	case "version", "schema_version":
		s, ok := v.(string)
		if !ok || !versionPattern().MatchString(s) {
			p.add(k, "must be a version string such as \"1.0\"")
			return
		}
		if major, _, _ := strings.Cut(s, "."); major != "1" {
			p.add(k, "%q: only task format 1.x is supported (multi-step tasks and later formats are not)", s)
			return
		}
		p.cfg.Version = s
	case "source":
		if _, ok := v.(string); !ok {
			p.add(k, "must be a string")
		}
	case "artifacts":
		if a, ok := v.([]any); !ok || len(a) > 0 {
			p.add(k, "is not supported: artifacts copied out of the environment after the agent are not collected (only an empty list is accepted)")
		}
	case "metadata":
		m, ok := v.(map[string]any)
		if !ok {
			p.add(k, "must be a table")
			return
		}
		p.cfg.Metadata = m
	case "task":
		p.task(v)
	case "agent":
		p.agent(v)
	case "verifier":
		p.verifier(v)
	case "solution":
		p.solution(v)
	case "environment":
		p.environment(v)
	default:
		p.add(k, "is not supported (known: version, schema_version, source, artifacts, [task], [metadata], [agent], [verifier], [solution], [environment])")
	}
}

// table calls key for each key of the table v of section, in sorted order, with the
// key's field name ("<section>.<key>") and its value; v not a table adds a problem
// naming section instead.
func (p *configParser) table(section string, v any, key func(field, k string, val any)) {
	m, ok := v.(map[string]any)
	if !ok {
		p.add(section, "must be a table")
		return
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		key(section+"."+k, k, m[k])
	}
}

func (p *configParser) task(v any) {
	p.table("task", v, func(field, k string, val any) {
		switch k {
		case "name":
			s, ok := val.(string)
			if !ok || s == "" {
				p.add(field, "must be a non-empty string")
				return
			}
			p.cfg.Name = s
		case "description":
			s, ok := val.(string)
			if !ok {
				p.add(field, "must be a string")
				return
			}
			p.cfg.Description = s
		case "authors", "keywords":
			if _, ok := val.([]any); !ok {
				p.add(field, "must be an array")
			}
		default:
			p.add(field, "is not supported (known: name, description, authors, keywords)")
		}
	})
}

func (p *configParser) agent(v any) {
	p.single("agent", "timeout_sec", v, func(field string, val any) { p.cfg.AgentTimeoutSec = p.seconds(field, val) })
}

func (p *configParser) verifier(v any) {
	p.table("verifier", v, func(field, k string, val any) {
		switch k {
		case "timeout_sec":
			p.cfg.VerifierTimeoutSec = p.seconds(field, val)
		case "env":
			p.noEnv(field, val, "the verifier")
		default:
			p.add(field, "is not supported (known: timeout_sec, env)")
		}
	})
}

func (p *configParser) solution(v any) {
	p.single("solution", "env", v, func(field string, val any) { p.noEnv(field, val, "the solution") })
}

// single handles the table v of a section whose one key is key: take reads that key's
// value with its field name; any other key is not supported.
func (p *configParser) single(section, key string, v any, take func(field string, val any)) {
	p.table(section, v, func(field, k string, val any) {
		if k != key {
			p.add(field, "is not supported (known: %s)", key)
			return
		}
		take(field, val)
	})
}

// noEnv accepts an empty environment table only: variables (often credentials) for
// the verifier or the solution are not passed.
func (p *configParser) noEnv(field string, v any, who string) {
	m, ok := v.(map[string]any)
	if !ok {
		p.add(field, "must be a table")
		return
	}
	if len(m) > 0 {
		p.add(field, "is not supported: environment variables for %s (%s) are not passed; a credential belongs to a secret reference, not to a task file", who, strings.Join(slices.Sorted(maps.Keys(m)), ", "))
	}
}

// seconds reads a positive number of seconds (integer or float) of at most a day.
func (p *configParser) seconds(field string, v any) float64 {
	f, ok := number(v)
	if !ok || f <= 0 || f > maxTimeoutSec || math.IsNaN(f) {
		p.add(field, "must be a number of seconds, more than 0 and at most %d", maxTimeoutSec)
		return 0
	}
	return f
}

// number is v as a float64 when it is a TOML integer or float.
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

var versionPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9]{1,3}(\.[0-9]{1,3}){0,2}$`) })

// sizePattern is the older memory and storage spelling: a number and a unit.
var sizePattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([0-9]{1,7})\s*([KMGT]i?B?|[kmgt])?$`) })

// sizeMB parses "4G", "512M", "2GiB"… as MiB (binary units; K rounds up to 1 MiB).
func sizeMB(s string) (int, bool) {
	m := sizePattern().FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, false
	}
	n, err := strconv.Atoi(m[1])
	if err != nil {
		return 0, false
	}
	unit := strings.ToUpper(strings.TrimSuffix(strings.TrimSuffix(m[2], "B"), "i"))
	switch unit {
	case "K":
		return max((n+1023)/1024, 1), true
	case "M", "":
		return n, true
	case "G":
		return n * 1024, true
	case "T":
		return n * 1024 * 1024, true
	}
	return 0, false
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 200 {
		s = string(r[:200]) + "…"
	}
	return s
}
