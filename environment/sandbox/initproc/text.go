package initproc

// The few string functions init needs, on byte comparisons only: package strings
// imports unicode, whose initialisation comes after reflect's in the program's order
// (package doc), so importing strings would make init wait for most of agentproof's
// packages to be initialised.

// cut slices s around the first sep (as strings.Cut).
func cut(s string, sep byte) (before, after string, found bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == sep {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// hasPrefix reports whether s begins with prefix.
func hasPrefix(s, prefix string) bool { return len(s) >= len(prefix) && s[:len(prefix)] == prefix }

// hasSuffix reports whether s ends with suffix.
func hasSuffix(s, suffix string) bool {
	return len(s) >= len(suffix) && s[len(s)-len(suffix):] == suffix
}

// lines splits s at every '\n', trimming spaces and tabs around each line.
func lines(s string) []string {
	var out []string
	for {
		line, rest, more := cut(s, '\n')
		out = append(out, trimBlank(line))
		if !more {
			return out
		}
		s = rest
	}
}

// trimBlank trims spaces, tabs and carriage returns at both ends of s.
func trimBlank(s string) string {
	blank := func(c byte) bool { return c == ' ' || c == '\t' || c == '\r' }
	for len(s) > 0 && blank(s[0]) {
		s = s[1:]
	}
	for len(s) > 0 && blank(s[len(s)-1]) {
		s = s[:len(s)-1]
	}
	return s
}

// allDigits reports whether s is non-empty and only ASCII digits.
func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// cleanPath reports whether the absolute path p has no empty, "." or ".." element and
// no trailing slash (as filepath.Clean would leave it).
func cleanPath(p string) bool {
	for rest := p[1:]; ; {
		elem, more, found := cut(rest, '/')
		if elem == "" || elem == "." || elem == ".." {
			return false
		}
		if !found {
			return true
		}
		rest = more
	}
}
