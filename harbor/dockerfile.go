package harbor

import (
	"strings"
)

// BaseImage is one FROM instruction of a Dockerfile whose image comes from an image
// store: Line is its 1-based line number, Image the image as written ("ubuntu:24.04").
// FROM scratch, FROM an earlier stage's name and FROM an image named by a build
// argument ("$BASE") are not base images of the store (an argument's value is the
// engine's to resolve).
type BaseImage struct {
	Line  int
	Image string
}

// fromInstruction is a FROM line split into its words: the flags (--platform=…), the
// image at index img, and "AS name" after it.
type fromInstruction struct {
	line   int
	words  []string
	img    int
	stage  string
	indent string
}

// fromLines returns the FROM instructions of dockerfile, in order. A line continued
// with a trailing backslash, a comment and a parser directive are not FROM
// instructions; the keyword is case-insensitive.
func fromLines(dockerfile string) []fromInstruction {
	var out []fromInstruction
	continued := false
	for i, line := range strings.Split(dockerfile, "\n") {
		line = strings.TrimSuffix(line, "\r")
		wasContinued := continued
		continued = strings.HasSuffix(strings.TrimRight(line, " \t"), "\\")
		trimmed := strings.TrimLeft(line, " \t")
		if wasContinued || strings.HasPrefix(trimmed, "#") {
			continue
		}
		words := strings.Fields(trimmed)
		if len(words) < 2 || !strings.EqualFold(words[0], "FROM") || continued {
			continue
		}
		f := fromInstruction{line: i + 1, words: words, img: -1, indent: line[:len(line)-len(trimmed)]}
		for j := 1; j < len(words); j++ {
			if !strings.HasPrefix(words[j], "--") {
				f.img = j
				break
			}
		}
		if f.img < 0 {
			continue
		}
		if rest := words[f.img+1:]; len(rest) == 2 && strings.EqualFold(rest[0], "AS") {
			f.stage = strings.ToLower(rest[1])
		}
		out = append(out, f)
	}
	return out
}

// BaseImages lists the base images dockerfile's FROM instructions take from an image
// store (see BaseImage), in order, each as often as it is named.
func BaseImages(dockerfile string) []BaseImage {
	var out []BaseImage
	stages := map[string]bool{}
	for _, f := range fromLines(dockerfile) {
		img := f.words[f.img]
		if !strings.EqualFold(img, "scratch") && !stages[strings.ToLower(img)] && !strings.Contains(img, "$") {
			out = append(out, BaseImage{Line: f.line, Image: img})
		}
		if f.stage != "" {
			stages[f.stage] = true
		}
	}
	return out
}

// ReplaceBaseImages returns dockerfile with the image of every FROM instruction that
// BaseImages lists and bases maps (the image as written → the image to build from)
// replaced; every other line is kept byte for byte. A FROM line it rewrites is its
// words joined by single spaces (flags and "AS name" kept).
func ReplaceBaseImages(dockerfile string, bases map[string]string) string {
	lines := strings.Split(dockerfile, "\n")
	listed := map[int]bool{}
	for _, b := range BaseImages(dockerfile) {
		listed[b.Line] = true
	}
	for _, f := range fromLines(dockerfile) {
		to, ok := bases[f.words[f.img]]
		if !ok || !listed[f.line] {
			continue
		}
		words := append([]string(nil), f.words...)
		words[f.img] = to
		lines[f.line-1] = f.indent + strings.Join(words, " ")
	}
	return strings.Join(lines, "\n")
}
