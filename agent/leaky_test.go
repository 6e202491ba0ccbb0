package agent_test

import (
	"context"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentproof/agentproof/agent"
	"github.com/agentproof/agentproof/agent/driver"
	"github.com/agentproof/agentproof/agent/reference"
	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/redact"
)

// TestRunBuiltinLeaks: the leaky agent carries out the reference turn and leaks every
// credential it sees, raw and encoded, through a comment, a workspace file, its stdout
// (Output), its error message and its run result; the wrong agent leaks only canary
// credentials, only encoded (never raw), and only into a workspace file. Neither puts
// a secret in argv.
func TestRunBuiltinLeaks(t *testing.T) {
	t.Parallel()
	const canary = "sk-ant-apcanary-0123456789abcdef0123"
	cfg, r := builtinConfig(t, "l3aky9")
	tests := []struct {
		name    string
		secrets map[string]string
		leaked  []string // values that must be leaked
		encoded []string // values that must be leaked hex-encoded into the file
		kept    []string // values that must not be (raw)
		comment bool
		errLeak bool
	}{
		{"leaky", map[string]string{"OPENAI_API_KEY": secretValue, "APF_CANARY_ANTHROPIC_API_KEY": canary}, []string{secretValue, canary}, []string{secretValue, canary}, nil, true, true},
		{"wrong", map[string]string{"OPENAI_API_KEY": secretValue, "APF_CANARY_ANTHROPIC_API_KEY": canary}, nil, []string{canary}, []string{secretValue, canary}, false, false},
		{"wrong", map[string]string{"OPENAI_API_KEY": secretValue}, nil, nil, []string{secretValue}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name+"/"+strings.Join(append(tt.leaked, tt.encoded...), "+"), func(t *testing.T) {
			t.Parallel()
			m := openMemory(t)
			env := runEnv(t)
			env.AdapterConfig, env.Secrets = cfg, tt.secrets
			spec, err := mustNew(t, tt.name, nil).Launch(runContext(), env)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range append(tt.leaked, tt.kept...) {
				if strings.Contains(strings.Join(spec.Args, " "), v) {
					t.Fatal("a secret is in argv")
				}
			}
			dial := func(context.Context, string, string) (controlplane.Port, error) { return m, nil }
			out, err := agent.RunBuiltin(context.Background(), driver.MustParse(tt.name), spec.Env, dial)
			if tt.errLeak != (err != nil) {
				t.Fatalf("error = %v, want one: %v", err, tt.errLeak)
			}
			if out.Turn != 1 {
				t.Fatalf("outcome %+v: the turn must be carried out", out)
			}
			st, _ := m.Snapshot(context.Background())
			file, _ := os.ReadFile(filepath.Join(env.Workspace, reference.LeakFile))
			var comments, result string
			for _, c := range st.Comments {
				comments += c.Body + "\n"
			}
			for _, run := range st.Runs {
				result += string(run.Result)
			}
			for _, v := range tt.leaked {
				if !strings.Contains(string(file), v) {
					t.Errorf("%s not leaked into the workspace file", v[:8])
				}
				if tt.comment && (!strings.Contains(comments, v) || !strings.Contains(out.Output, v) || !strings.Contains(err.Error(), v) || !strings.Contains(result, v)) {
					t.Errorf("%s not leaked through comment, stdout, error and result", v[:8])
				}
			}
			for _, v := range tt.encoded {
				if !strings.Contains(string(file), hex.EncodeToString([]byte(v))) {
					t.Errorf("%s not leaked hex-encoded into the workspace file", v[:8])
				}
			}
			for _, v := range tt.kept {
				if strings.Contains(string(file)+comments+out.Output+result, v) {
					t.Errorf("%s leaked but must not be", v[:8])
				}
			}
			if tt.leaked == nil && tt.encoded == nil && file != nil {
				t.Errorf("wrong agent without canaries wrote %s", reference.LeakFile)
			}
			// the reference work is still done: the marker is the final message
			if last := st.Comments[len(st.Comments)-1].Body; tt.name == "leaky" && last != r.Marker {
				t.Errorf("final message %q, want the marker %q", last, r.Marker)
			}
		})
	}
}

func TestCredentials(t *testing.T) {
	t.Parallel()
	got := agent.Credentials(map[string]string{"AGENTPROOF_RUN_TOKEN": "t", "HOME": "/h", "PATH": "/bin", "LANG": "C", "TZ": "UTC", "OPENAI_API_KEY": "k", "EMPTY": ""})
	if len(got) != 1 || got["OPENAI_API_KEY"] != "k" {
		t.Errorf("Credentials = %v", got)
	}
	if _, err := reference.LeakyScript(nil, "x", true); err == nil {
		t.Error("LeakyScript(nil): want an error")
	}
}

// TestEncodedCredentialLines: every line of the careless agents' encoded leak holds an
// encoded copy of its credential (found by redact as an encoded leak) and none holds a
// raw value.
func TestEncodedCredentialLines(t *testing.T) {
	t.Parallel()
	creds := map[string]string{"A_KEY": "sk-ant-apcanary-0123456789abcdef0123", "B_AUTH": "Bearer apcanary/0123456789+abcdef", "C_PEM": "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----"}
	got := agent.EncodedCredentialLines(creds)
	for name, v := range creds {
		if strings.Contains(got, v) {
			t.Errorf("%s leaked raw", name)
		}
		set := redact.NewSet(v)
		n := 0
		for _, line := range strings.Split(got, "\n") {
			if !strings.HasPrefix(line, name+" ") {
				continue
			}
			n++
			if l, ok := set.FindLeak([]byte(line), false); !ok || l.Reason != redact.ReasonEncoded {
				t.Errorf("%s line %q: leak %+v, %v; want an encoded leak", name, line[:len(name)+8], l, ok)
			}
		}
		if n < 2 {
			t.Errorf("%s: %d lines, want at least 2", name, n)
		}
	}
	if agent.EncodedCredentialLines(nil) != "" {
		t.Error("lines for no credentials")
	}
}
