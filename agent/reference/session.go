package reference

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/agentproof/agentproof/atomicfile"
)

// SessionSchema tags a session file.
const SessionSchema = "agentproof.reference-session/v1"

// sessionFile is the name of the session file inside the state directory.
const sessionFile = "reference-session.json"

// Session is what the reference agent remembers about one task between its runs, like a
// real agent's session: TurnsDone counts the script turns it carried out (the next run
// takes Turns[TurnsDone]); Documents maps a document key to the latest revision id the
// agent wrote (write_document without baseRevisionId and request_human_input with
// targetDocumentKey resolve through it); LastRunID is the run that finished the last
// turn, so that the same run is never carried out twice; Ordinal is the task's place
// (1-based) in the order the agent was first woken on its tasks (a ReferenceTurn's
// Task; 0, in a session written before tasks were counted, means 1).
type Session struct {
	Ordinal   int               `json:"ordinal,omitempty"`
	TurnsDone int               `json:"turnsDone"`
	Documents map[string]string `json:"documents"`
	LastRunID string            `json:"lastRunId"`
}

// sessionStore is the session file's content: one Session per task id.
type sessionStore struct {
	Schema string              `json:"schema"`
	Tasks  map[string]*Session `json:"tasks"`
}

// LoadSession reads the session of taskID from stateDir. A missing file or task is a
// fresh Session; an unreadable or malformed file, or a wrong schema tag, is an error.
func LoadSession(stateDir, taskID string) (*Session, error) {
	st, err := readStore(stateDir)
	if err != nil {
		return nil, err
	}
	s := st.Tasks[taskID]
	if s == nil {
		s = &Session{Ordinal: len(st.Tasks) + 1}
	}
	if s.Documents == nil {
		s.Documents = map[string]string{}
	}
	return s, nil
}

// SaveSession writes s as the session of taskID into stateDir atomically (temporary
// file, fsync, rename), keeping the sessions of other tasks. stateDir must exist.
func SaveSession(stateDir, taskID string, s *Session) error {
	st, err := readStore(stateDir)
	if err != nil {
		return err
	}
	st.Tasks[taskID] = s
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("reference: encoding the session: %w", err)
	}
	return writeFileAtomic(filepath.Join(stateDir, sessionFile), append(b, '\n'))
}

func readStore(stateDir string) (*sessionStore, error) {
	if stateDir == "" {
		return nil, errors.New("reference: no state directory for the agent's session")
	}
	path := filepath.Join(stateDir, sessionFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &sessionStore{Schema: SessionSchema, Tasks: map[string]*Session{}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reference: reading the session: %w", err)
	}
	var st sessionStore
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("reference: session %s is not valid JSON: %w", path, err)
	}
	if st.Schema != SessionSchema {
		return nil, fmt.Errorf("reference: session %s has schema %q, want %q", path, st.Schema, SessionSchema)
	}
	if st.Tasks == nil {
		st.Tasks = map[string]*Session{}
	}
	return &st, nil
}

// writeFileAtomic writes data to path (mode 0600) durably through atomicfile.
func writeFileAtomic(path string, data []byte) error {
	if err := atomicfile.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("reference: %w", err)
	}
	return nil
}
