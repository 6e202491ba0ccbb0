package attempt

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/agentproof/agentproof/client"
	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/match"
)

// maxObservedBytes bounds what observe downloads of one attempt's agent home and
// artifacts together (bytes). Past it the remaining files are listed but not
// downloaded: a matcher that needs their bytes is not reached (inconclusive), never
// passed.
const maxObservedBytes = 64 << 20

// observedFiles is what observeFiles downloaded through the public file API: the
// agent's home (its listing, as the board serves it, and the bytes of every file, each
// checked against its SHA-256 by the client), the home save receipts of the agent,
// and the bytes of the observed tasks' artifacts by artifact id.
type observedFiles struct {
	home      homeListing
	homeBytes map[string][]byte // path → bytes; nil when the home was not downloaded whole
	receipts  []controlplane.HomeReceipt
	// artifacts are the observed tasks' artifacts in state order (matchObservation's
	// order): each one's downloaded bytes, nil when it was not downloaded.
	artifacts [][]byte
}

// homeListing is snapshots/agent-home.json and the composite JSON's homeFiles: the
// agent's managed home files and the home digest the board reports.
type homeListing struct {
	ActorID    string                     `json:"actorId"`
	Files      []controlplane.ManagedFile `json:"files"`
	HomeDigest string                     `json:"homeDigest,omitempty"`
	// Downloaded says every file's bytes were downloaded (false past maxObservedBytes).
	Downloaded bool `json:"downloaded"`
}

// observeFiles downloads the agent's home and the artifacts of tasks through co (docs/files.md
// "Observed bytes"). Errors: a listing or a download the board refused or that did
// not match its SHA-256 (the client checks the ETag and Content-Digest) — the control
// plane's fault, never the candidate's.
func observeFiles(ctx context.Context, co *client.Company, st *controlplane.State, agent string, tasks []string) (observedFiles, error) {
	out := observedFiles{home: homeListing{ActorID: agent, Files: []controlplane.ManagedFile{}}, receipts: []controlplane.HomeReceipt{}}
	if agent == "" {
		return out, nil
	}
	list, err := co.Files(ctx, controlplane.FileScopeAgentHome, agent)
	if err != nil {
		return out, fmt.Errorf("listing the agent's home: %w", err)
	}
	out.home.HomeDigest = list.HomeDigest
	if list.Files != nil {
		out.home.Files = list.Files
	}
	budget := int64(maxObservedBytes)
	out.homeBytes = map[string][]byte{}
	for _, f := range out.home.Files {
		if f.ByteSize > budget {
			out.homeBytes = nil
			break
		}
		d, err := co.FileContent(ctx, f.ID)
		if err != nil {
			return out, fmt.Errorf("downloading home file %s: %w", f.Path, err)
		}
		if d.SHA256 != f.SHA256 {
			return out, fmt.Errorf("home file %s downloads as SHA-256 %s, listed as %s", f.Path, d.SHA256, f.SHA256)
		}
		budget -= int64(len(d.Bytes))
		out.homeBytes[f.Path] = d.Bytes
	}
	out.home.Downloaded = out.homeBytes != nil
	if out.receipts, err = co.HomeReceipts(ctx, agent, ""); err != nil {
		return out, fmt.Errorf("listing the home save receipts: %w", err)
	}
	if out.receipts == nil {
		out.receipts = []controlplane.HomeReceipt{}
	}
	for _, ar := range st.Artifacts {
		if !slices.Contains(tasks, ar.TaskID) {
			continue
		}
		if ar.ByteSize > budget {
			out.artifacts = append(out.artifacts, nil)
			continue
		}
		d, err := co.ArtifactContent(ctx, ar.ID)
		if err != nil {
			return out, fmt.Errorf("downloading artifact %s (%s): %w", ar.ID, ar.Filename, err)
		}
		budget -= int64(len(d.Bytes))
		b := d.Bytes
		if b == nil {
			b = []byte{}
		}
		out.artifacts = append(out.artifacts, b)
	}
	return out, nil
}

// apply puts the downloaded bytes into the observation: the home files (HomeFiles,
// when the home was downloaded whole), each artifact's downloaded bytes (the
// observation lists the same artifacts in the same order; the matchers compare the
// bytes with the digest each was registered with), and homeFiles and homeReceipts
// into the composite JSON.
func (o observedFiles) apply(obs *match.Observation) {
	if o.homeBytes != nil {
		obs.HomeFiles, obs.HasHomeFiles = o.homeBytes, true
	}
	for i := range obs.Artifacts {
		if i < len(o.artifacts) && o.artifacts[i] != nil {
			obs.Artifacts[i].Downloaded, obs.Artifacts[i].Content = true, o.artifacts[i]
		}
	}
	if len(obs.JSON) == 0 {
		return
	}
	doc := map[string]json.RawMessage{}
	if json.Unmarshal(obs.JSON, &doc) != nil {
		return
	}
	if b, err := json.Marshal(o.home); err == nil {
		doc["homeFiles"] = b
	}
	if b, err := json.Marshal(o.receipts); err == nil {
		doc["homeReceipts"] = b
	}
	if b, err := json.Marshal(doc); err == nil {
		obs.JSON = b
	}
}
