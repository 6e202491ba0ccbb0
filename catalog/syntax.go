package catalog

import (
	"bytes"
	"sort"

	"go.yaml.in/yaml/v3"
)

// syntaxErrorLine returns the 1-based line of data at which the YAML syntax error full
// (what decoding every document of data returned) shows: the first line L such that
// the lines 1..L alone fail with the same error. It returns 0 when no prefix of whole
// lines fails with it.
//
// go.yaml.in/yaml/v3 reports a syntax error at its context mark when there is one —
// where the enclosing block or scalar starts, for a parser error even one line before
// it (the mark is 0-based there) — so "did not find expected key" under a mis-indented
// key names the line of the sequence that holds it, not the key, and a tab in an
// indentation is reported one line early. The same error instance has the same context
// mark and message, so the prefix test finds the line of the offending token itself;
// an unterminated quoted scalar or flow collection fails with the same error from the
// line that opens it on, so that line (where the closing quote or bracket is missing)
// is the answer. The search is binary (about
// log2(lines) parses): every prefix from the offending line on fails with the error.
func syntaxErrorLine(data []byte, full error) int {
	want := full.Error()
	ends := lineEnds(data)
	n := sort.Search(len(ends), func(i int) bool {
		err := firstSyntaxError(data[:ends[i]])
		return err != nil && err.Error() == want
	})
	if n == len(ends) {
		return 0
	}
	return n + 1
}

// lineEnds returns the end offset (just past its newline) of every line of data; the
// last line may have no newline.
func lineEnds(data []byte) []int {
	var ends []int
	for off := 0; off < len(data); {
		i := bytes.IndexByte(data[off:], '\n')
		if i < 0 {
			ends = append(ends, len(data))
			break
		}
		off += i + 1
		ends = append(ends, off)
	}
	return ends
}

// firstSyntaxError decodes every YAML document of data and returns the first error
// (nil when every document parses).
func firstSyntaxError(data []byte) error {
	return eachDoc(data, func(*yaml.Node) bool { return true })
}
