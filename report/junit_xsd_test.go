package report

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentproof/agentproof/result"
	"github.com/agentproof/agentproof/verdict"
)

// xmllint is the path of xmllint (Debian's libxml2-utils). In CI a missing xmllint
// fails the test (.ci/run installs it); on a developer machine without it and without
// CI the test is skipped, saying so.
func xmllint(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("xmllint"); err == nil {
		return p
	}
	if os.Getenv("CI") != "" {
		t.Fatal("xmllint is not installed but CI is set: install Debian's libxml2-utils package (.ci/run does)")
	}
	t.Skip("xmllint is not installed and CI is unset: skipping the XSD check locally (apt-get install libxml2-utils to run it)")
	return ""
}

// validateXSD runs xmllint --schema xsd on doc; the error holds xmllint's words.
func validateXSD(t *testing.T, lint, xsd string, doc []byte) error {
	t.Helper()
	path := filepath.Join(t.TempDir(), "junit.xml")
	if err := os.WriteFile(path, doc, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(lint, "--noout", "--nonet", "--schema", xsd, path).CombinedOutput()
	if err != nil {
		return &xsdError{string(out)}
	}
	return nil
}

type xsdError struct{ out string }

func (e *xsdError) Error() string { return strings.TrimSpace(e.out) }

// TestJUnitXSD validates junit.xml against the published JUnit schema of Jenkins'
// xUnit plugin (testdata/schemas/junit-10.xsd) with xmllint: the golden campaign, one
// with inconclusive cells as failures, one whose only cell is missing, one with a
// failed cell; and a document that breaks the schema is refused (the check can fail).
func TestJUnitXSD(t *testing.T) {
	t.Parallel()
	lint := xmllint(t)
	xsd := filepath.Join("testdata", "schemas", "junit-10.xsd")
	golden, err := os.ReadFile(filepath.Join("testdata", "golden", "junit.xml"))
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string][]byte{"golden": golden}
	missing := []result.Result{result.Synthetic(nil, "c", "s.p.local.c", "missing")}
	docs["synthetic as failure"] = JUnit(result.BuildCampaign("c", nil, []string{"s.p.local.c"}, missing, nil, true))
	docs["synthetic as skipped"] = JUnit(result.BuildCampaign("c", nil, []string{"s.p.local.c"}, missing, nil, false))
	failed := missing[0]
	failed.Synthetic, failed.Attempt, failed.Verdict, failed.Error = false, 1, verdict.Failed, "a \x1b[31mcoloured\x1b[0m error & <tag>"
	failed.FailureClass = verdict.CandidateFailure
	docs["failed"] = JUnit(result.BuildCampaign("c", nil, []string{"s.p.local.c"}, []result.Result{failed}, nil, false))
	for name, doc := range docs {
		if err := validateXSD(t, lint, xsd, doc); err != nil {
			t.Errorf("%s: junit.xml fails the JUnit XSD: %v", name, err)
		}
	}
	broken := strings.Replace(string(golden), "<testsuite name=", "<testsuite errors-typo=\"1\" name=", 1)
	if validateXSD(t, lint, xsd, []byte(broken)) == nil {
		t.Error("a testsuite with an attribute the schema does not know passed the XSD")
	}
}
