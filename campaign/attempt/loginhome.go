package attempt

import (
	"context"
	"fmt"
	"strconv"

	"github.com/agentproof/agentproof/campaign"
	"github.com/agentproof/agentproof/campaign/fixture"
	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/loginfile"
	"github.com/agentproof/agentproof/redact"
	"github.com/agentproof/agentproof/verdict"
)

// loginFixtureID is the fixture that seeds a cell's login file (catalog.Cell.LoginFile)
// into the company-scoped HOME its exec agent launches with (docs/secrets.md "Login
// files").
const loginFixtureID = "loginFile"

// loginInput is what the login-file fixture needs: the credential (its id and path
// below HOME), its value (in memory only: never in a record, a log or the agent's
// configuration), the attempt's tree (Root) and the instance home the company HOME
// lies in.
type loginInput struct {
	credential *catalog.Credential
	value      string
	root, home string
}

// LoginFileEvidence is login-file.json: what the fixtures stage seeded (path and size,
// never the value) and what teardown's destroy did (Teardown nil when it did not run).
type LoginFileEvidence struct {
	Credential string              `json:"credential"`
	Seeded     loginfile.Seeded    `json:"seeded"`
	Teardown   *loginfile.Teardown `json:"teardown,omitempty"`
}

// LoginSecrets is secrets with every text of a login file's value that must never
// appear anywhere (loginfile.SecretValues, in every credential form): registered
// before anything is written, so that every evidence write and scan knows them (the
// campaign's own files are guarded with the same texts).
func LoginSecrets(secrets *redact.Set, value string) *redact.Set {
	return secrets.WithCredentials(loginfile.SecretValues([]byte(value))...)
}

// loginFixture seeds the login file into loginfile.CompanyHome(instance home,
// company) with loginfile.Seed, after the secrets fixture stored it with the instance
// as a login_file secret. Its record holds the secret's id and the seeded file's path
// and size. A refusal (the HOME a symbolic link, already occupied, outside the
// attempt's tree; a value the secret set does not hold) is a permanent harness fault:
// setup is the harness's, never the candidate's. The HOME is destroyed by the teardown
// stage once the server and every agent process are gone (destroyLoginHome), not by
// the registry's teardown, which runs while the server still does.
func loginFixture(in fixtureInput) fixture.Definition {
	lf := in.login
	return fixture.Definition{
		ID:           loginFixtureID,
		Dependencies: []string{"company", "secrets"},
		Setup: func(_ context.Context, res fixture.Resolved) (fixture.Record, error) {
			id := lf.credential.ID
			home, err := loginfile.CompanyHome(lf.home, res["company"].IDs["company"])
			if err != nil {
				return fixture.Record{}, verdict.HarnessFault(fmt.Errorf("seeding login file %s: %w", id, err), false)
			}
			s, err := loginfile.Seed(loginfile.Spec{Root: lf.root, Home: home, Path: lf.credential.LoginFile, Value: []byte(lf.value), Secrets: in.secrets})
			if err != nil {
				return fixture.Record{}, verdict.HarnessFault(fmt.Errorf("seeding login file %s: %w", id, err), false)
			}
			return fixture.Record{IDs: map[string]string{"secret": res["secrets"].IDs[id]},
				Metadata: map[string]string{"credential": id, "home": s.Home, "file": s.File, "bytes": strconv.Itoa(s.Bytes)}}, nil
		},
	}
}

// seededOf is the seeded login file the login fixture's record describes, or nil when
// it did not complete.
func seededOf(fx *fixture.Fixtures) *LoginFileEvidence {
	if fx == nil {
		return nil
	}
	rec, ok := fx.Record(loginFixtureID)
	if !ok {
		return nil
	}
	n, _ := strconv.Atoi(rec.Metadata["bytes"])
	return &LoginFileEvidence{Credential: rec.Metadata["credential"], Seeded: loginfile.Seeded{Home: rec.Metadata["home"], File: rec.Metadata["file"], Bytes: n}}
}

// destroyLoginHome destroys the seeded login file's HOME (loginfile.Seeded.Destroy:
// overwritten, removed, confirmed gone), writes login-file.json and returns the
// cleanup problem of a destroy that was not confirmed ("" when it was, or nothing was
// seeded): a cleanup failure, never the candidate's.
func destroyLoginHome(ev *campaign.Evidence, secrets *redact.Set, seeded *LoginFileEvidence) string {
	if seeded == nil {
		return ""
	}
	td, err := seeded.Seeded.Destroy()
	out := *seeded
	out.Teardown = &td
	writeJSON(ev, secrets, "login-file.json", out)
	if err != nil {
		return secrets.RedactText(fmt.Sprintf("the login file %s's HOME was not confirmed destroyed: %v", seeded.Credential, err))
	}
	return ""
}
