package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"
)

// k8sExamples are the Kubernetes manifests of the repository.
var k8sExamples = filepath.Join("..", "..", "examples", "kubernetes")

// k8sSchemas maps apiVersion/kind to the published JSON schema of Kubernetes 1.32.2
// (yannh/kubernetes-json-schema, v1.32.2-standalone-strict: unknown fields refused;
// testdata/k8s/SOURCES.md).
var k8sSchemas = map[string]string{
	"batch/v1/Job":             "v1.32.2-standalone-strict-job-batch-v1.json",
	"v1/PersistentVolumeClaim": "v1.32.2-standalone-strict-persistentvolumeclaim-v1.json",
}

// k8sDocs reads every YAML document of a manifest as a JSON value.
func k8sDocs(t testing.TB, path string) []map[string]any {
	t.Helper()
	docs, err := readK8sDocs(path)
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

func readK8sDocs(path string) ([]map[string]any, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var docs []map[string]any
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); err == io.EOF {
			return docs, nil
		} else if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		docs = append(docs, doc)
	}
}

// k8sValidate validates doc against the schema of its apiVersion and kind.
func k8sValidate(t *testing.T, doc map[string]any) error {
	t.Helper()
	key := doc["apiVersion"].(string) + "/" + doc["kind"].(string)
	name, ok := k8sSchemas[key]
	if !ok {
		t.Fatalf("no schema for %s: add the published one to testdata/k8s", key)
	}
	raw, err := os.ReadFile(filepath.Join("testdata", "k8s", name))
	if err != nil {
		t.Fatal(err)
	}
	sdoc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	url := "https://agentproof.invalid/k8s/" + name
	if err := c.AddResource(url, sdoc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(url)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return s.Validate(inst)
}

// TestKubernetesManifestsValidate validates every document of examples/kubernetes
// against the Kubernetes JSON schema of its kind, checks the Indexed Job runs one
// shard per index (--shard from JOB_COMPLETION_INDEX, completions = $SHARDS) with the
// results volume mounted, and that the schemas are not blind: a misspelt field and a
// wrong type are refused.
func TestKubernetesManifestsValidate(t *testing.T) {
	t.Parallel()
	var indexed int
	for _, name := range []string{"shards.yaml", "merge.yaml"} {
		for _, doc := range k8sDocs(t, filepath.Join(k8sExamples, name)) {
			if err := k8sValidate(t, doc); err != nil {
				t.Errorf("%s: %s %v: %v", name, doc["kind"], doc["metadata"], err)
			}
			if job := k8sJobOf(doc); job != nil && job.indexed {
				indexed++
				if job.completions != job.env["SHARDS"] || !strings.Contains(job.script, `--shard "$((JOB_COMPLETION_INDEX + 1))/$SHARDS"`) {
					t.Errorf("%s: the Indexed Job runs %q with %s completions and SHARDS=%s", name, job.script, job.completions, job.env["SHARDS"])
				}
				if job.mounts["results"] != job.env["RESULTS"] {
					t.Errorf("%s: the results volume is mounted at %q, $RESULTS is %q", name, job.mounts["results"], job.env["RESULTS"])
				}
			}
		}
	}
	if indexed != 1 {
		t.Errorf("%d Indexed Jobs, want 1", indexed)
	}
	job := k8sDocs(t, filepath.Join(k8sExamples, "shards.yaml"))[1]
	spec := job["spec"].(map[string]any)
	spec["completionsMode"] = "Indexed"
	if k8sValidate(t, job) == nil {
		t.Error("a misspelt field (completionsMode) passed the Job schema")
	}
	delete(spec, "completionsMode")
	spec["parallelism"] = "eight"
	if k8sValidate(t, job) == nil {
		t.Error("parallelism \"eight\" passed the Job schema")
	}
}

// k8sJob is what the local simulation needs of a Job: its container's shell script
// (command /bin/sh -c and its args), environment, volume mount paths by volume name,
// whether it is Indexed and its completions and parallelism.
type k8sJob struct {
	name, script, completions string
	indexed                   bool
	parallelism               int
	env, mounts               map[string]string
}

// k8sJobOf reads a Job document; nil for another kind.
func k8sJobOf(doc map[string]any) *k8sJob {
	if doc["kind"] != "Job" {
		return nil
	}
	spec := doc["spec"].(map[string]any)
	pod := spec["template"].(map[string]any)["spec"].(map[string]any)
	ctr := pod["containers"].([]any)[0].(map[string]any)
	j := &k8sJob{name: doc["metadata"].(map[string]any)["name"].(string), env: map[string]string{}, mounts: map[string]string{}, completions: "1", parallelism: 1}
	cmd := append(ctr["command"].([]any), ctr["args"].([]any)...)
	if len(cmd) == 3 && cmd[0] == "/bin/sh" && cmd[1] == "-c" {
		j.script = cmd[2].(string)
	}
	for _, e := range ctr["env"].([]any) {
		e := e.(map[string]any)
		j.env[e["name"].(string)] = e["value"].(string)
	}
	for _, m := range ctr["volumeMounts"].([]any) {
		m := m.(map[string]any)
		j.mounts[m["name"].(string)] = m["mountPath"].(string)
	}
	if spec["completionMode"] == "Indexed" {
		j.indexed = true
		j.completions = strconv.Itoa(spec["completions"].(int))
		j.parallelism = spec["parallelism"].(int)
	}
	return j
}

// k8sJobCmd is the script command `k8sjob <manifest> <job name>`: it runs the Job's
// pods as local processes, exactly as the pods would run them: the container's command
// (/bin/sh -c <script>) with the container's environment, JOB_COMPLETION_INDEX set per
// index for an Indexed Job (all indexes at once, as parallelism allows), and each
// volume's mount path replaced by $WORK/<volume name> in the script and the
// environment; PATH, HOME and TMPDIR are the script's (agentproof is on its PATH, as
// in the image). Each pod's output goes to stdout, prefixed; with `!` at least one pod
// must fail, else every pod must succeed.
func k8sJobCmd(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: k8sjob <manifest> <job name>")
	}
	var job *k8sJob
	docs, err := readK8sDocs(ts.MkAbs(args[0]))
	ts.Check(err)
	for _, doc := range docs {
		if j := k8sJobOf(doc); j != nil && j.name == args[1] {
			job = j
		}
	}
	if job == nil || job.script == "" {
		ts.Fatalf("%s: no Job %s running /bin/sh -c <script>", args[0], args[1])
	}
	n, _ := strconv.Atoi(job.completions)
	outs, failed := make([]string, n), 0
	var mu sync.Mutex
	var wg sync.WaitGroup
	slots := make(chan struct{}, job.parallelism)
	for i := range n {
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer func() { <-slots; wg.Done() }()
			out, err := k8sPod(ts, job, i).CombinedOutput()
			mu.Lock()
			defer mu.Unlock()
			outs[i] = string(out)
			if err != nil {
				failed++
				outs[i] += "pod " + strconv.Itoa(i) + ": " + err.Error() + "\n"
			}
		}()
	}
	wg.Wait()
	for i, o := range outs {
		ts.Logf("pod %d:\n%s", i, o)
		_, _ = ts.Stdout().Write([]byte(o))
	}
	switch {
	case neg && failed == 0:
		ts.Fatalf("every pod of %s succeeded", job.name)
	case !neg && failed > 0:
		ts.Fatalf("%d pod(s) of %s failed", failed, job.name)
	}
}

// k8sPod is the process of pod index of job.
func k8sPod(ts *testscript.TestScript, job *k8sJob, index int) *exec.Cmd {
	local := func(s string) string {
		for vol, path := range job.mounts {
			s = strings.ReplaceAll(s, path, ts.MkAbs(vol))
		}
		return s
	}
	cmd := exec.Command("/bin/sh", "-c", local(job.script))
	cmd.Dir = ts.MkAbs(".")
	cmd.Env = []string{"PATH=" + ts.Getenv("PATH"), "HOME=" + ts.Getenv("HOME"), "TMPDIR=" + ts.Getenv("TMPDIR")}
	for k, v := range job.env {
		cmd.Env = append(cmd.Env, k+"="+local(v))
	}
	if job.indexed {
		cmd.Env = append(cmd.Env, "JOB_COMPLETION_INDEX="+strconv.Itoa(index))
	}
	return cmd
}
