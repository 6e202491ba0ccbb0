package report

// No XML Schema validator is among the approved dependencies,
// so junit.xml is checked here against the rules of the Jenkins JUnit schema
// (junit-4.xsd, the schema Jenkins' JUnit plugin publishes) written out as data: the
// elements each element may contain, in order, the attributes each may carry and the
// required ones. The schema types every attribute as xs:string; agentproof checks
// more than it asks: counts are non-negative integers that agree with the elements
// they count, and times are seconds with at most three decimals.

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentproof/agentproof/result"
)

// junitElement is one element's rule: its children in schema order, its attributes,
// the required ones and the integer-valued ones.
type junitElement struct {
	children []string
	attrs    []string
	required []string
	ints     []string
}

var junitSchema = map[string]junitElement{
	"testsuites": {children: []string{"testsuite"}, attrs: []string{"name", "time", "tests", "failures", "disabled", "errors"}, ints: []string{"tests", "failures", "disabled", "errors"}},
	"testsuite": {children: []string{"properties", "testcase", "system-out", "system-err"},
		attrs:    []string{"name", "tests", "failures", "errors", "time", "disabled", "skipped", "timestamp", "hostname", "id", "package"},
		required: []string{"name", "tests"}, ints: []string{"tests", "failures", "errors", "disabled", "skipped"}},
	"properties": {children: []string{"property"}},
	"property":   {attrs: []string{"name", "value"}, required: []string{"name", "value"}},
	"testcase": {children: []string{"skipped", "error", "failure", "system-out", "system-err"},
		attrs: []string{"name", "assertions", "time", "classname", "status"}, required: []string{"name"}},
	"skipped":    {},
	"failure":    {attrs: []string{"type", "message"}},
	"error":      {attrs: []string{"type", "message"}},
	"system-out": {},
	"system-err": {},
}

// secondsTime is a time in seconds with at most three decimals.
var secondsTime = regexp.MustCompile(`^[0-9]+(\.[0-9]{1,3})?$`)

type junitNode struct {
	name     string
	attrs    map[string]string
	children []*junitNode
}

func parseJUnit(t *testing.T, b []byte) *junitNode {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(b))
	var stack []*junitNode
	var root *junitNode
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("junit.xml is not well-formed XML: %v", err)
		}
		switch x := tok.(type) {
		case xml.StartElement:
			n := &junitNode{name: x.Name.Local, attrs: map[string]string{}}
			for _, a := range x.Attr {
				n.attrs[a.Name.Local] = a.Value
			}
			if len(stack) > 0 {
				p := stack[len(stack)-1]
				p.children = append(p.children, n)
			} else {
				root = n
			}
			stack = append(stack, n)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		}
	}
	return root
}

// checkJUnit returns every violation of junitSchema under n (path-qualified).
func checkJUnit(n *junitNode, path string) []string {
	var bad []string
	rule, ok := junitSchema[n.name]
	if !ok {
		return []string{path + ": element <" + n.name + "> is not in the schema"}
	}
	for a, v := range n.attrs {
		switch {
		case !slices.Contains(rule.attrs, a):
			bad = append(bad, fmt.Sprintf("%s: attribute %s is not allowed", path, a))
		case slices.Contains(rule.ints, a):
			if i, err := strconv.Atoi(v); err != nil || i < 0 {
				bad = append(bad, fmt.Sprintf("%s: %s=%q is not a non-negative integer", path, a, v))
			}
		case a == "time" && !secondsTime.MatchString(v):
			bad = append(bad, fmt.Sprintf("%s: time=%q is not seconds with at most three decimals", path, v))
		case (a == "name" && n.name != "testsuites") && strings.TrimSpace(v) == "":
			bad = append(bad, fmt.Sprintf("%s: empty name", path))
		}
	}
	for _, a := range rule.required {
		if _, ok := n.attrs[a]; !ok {
			bad = append(bad, fmt.Sprintf("%s: required attribute %s missing", path, a))
		}
	}
	last := -1
	count := map[string]int{}
	for i, c := range n.children {
		at := slices.Index(rule.children, c.name)
		if at < 0 {
			bad = append(bad, fmt.Sprintf("%s: <%s> may not contain <%s>", path, n.name, c.name))
			continue
		}
		if at < last {
			bad = append(bad, fmt.Sprintf("%s: <%s> out of schema order", path, c.name))
		}
		last = at
		count[c.name]++
		bad = append(bad, checkJUnit(c, fmt.Sprintf("%s/%s[%d]", path, c.name, i))...)
	}
	switch n.name {
	case "properties":
		if count["property"] == 0 {
			bad = append(bad, path+": <properties> needs at least one <property>")
		}
	case "testcase":
		if count["skipped"] > 1 {
			bad = append(bad, path+": at most one <skipped>")
		}
		if count["skipped"]+count["failure"]+count["error"] > 1 {
			bad = append(bad, path+": agentproof gives a testcase at most one outcome element")
		}
	case "testsuite":
		bad = append(bad, checkCounts(n, path, "testcase")...)
	case "testsuites":
		bad = append(bad, checkCounts(n, path, "testsuite")...)
	}
	return bad
}

// checkCounts compares tests, failures, skipped and errors with the testcases under n.
func checkCounts(n *junitNode, path, child string) []string {
	var cases []*junitNode
	for _, c := range n.children {
		if c.name != child {
			continue
		}
		if child == "testcase" {
			cases = append(cases, c)
			continue
		}
		for _, cc := range c.children {
			if cc.name == "testcase" {
				cases = append(cases, cc)
			}
		}
	}
	got := map[string]int{"tests": len(cases)}
	for _, c := range cases {
		for _, o := range c.children {
			switch o.name {
			case "failure":
				got["failures"]++
			case "skipped":
				got["skipped"]++
			case "error":
				got["errors"]++
			}
		}
	}
	var bad []string
	for _, a := range []string{"tests", "failures", "skipped", "errors"} {
		if v, ok := n.attrs[a]; ok && v != strconv.Itoa(got[a]) {
			bad = append(bad, fmt.Sprintf("%s: %s=%s, but it holds %d", path, a, v, got[a]))
		}
	}
	return bad
}

// TestJUnitFollowsSchema: the golden junit.xml, one rendered with inconclusive cells as
// failures, and one of a campaign with a synthetic-only suite follow the schema; a
// document that breaks it is caught (the checker can fail).
func TestJUnitFollowsSchema(t *testing.T) {
	t.Parallel()
	golden, err := os.ReadFile(filepath.Join("testdata", "golden", "junit.xml"))
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string][]byte{"golden": golden}
	c := result.BuildCampaign("c", nil, []string{"s.p.local.c"}, []result.Result{result.Synthetic(nil, "c", "s.p.local.c", "missing")}, nil, true)
	docs["synthetic as failure"] = JUnit(c)
	for name, b := range docs {
		root := parseJUnit(t, b)
		if root == nil || root.name != "testsuites" {
			t.Fatalf("%s: root is not <testsuites>", name)
		}
		if bad := checkJUnit(root, "testsuites"); len(bad) > 0 {
			t.Errorf("%s breaks the JUnit schema:\n%s", name, strings.Join(bad, "\n"))
		}
	}
	if !bytes.Contains(golden, []byte(`<property name="evidence:core.reference.local.message-marker" value="core/reference/local/message-marker/attempt-2/"/>`)) {
		t.Errorf("the golden junit.xml does not carry the chosen attempt's evidence directory")
	}
	broken := strings.NewReplacer(`tests="5"`, `tests="6"`, `<properties>`, `<properties><testcase name="x"/>`, `time="0.800"`, `time="0.8s"`).Replace(string(golden))
	if bad := checkJUnit(parseJUnit(t, []byte(broken)), "testsuites"); len(bad) != 4 {
		t.Errorf("a broken document gives %d problems, want 4 (two misplaced testcases, a time, a count): %q", len(bad), bad)
	}
}
