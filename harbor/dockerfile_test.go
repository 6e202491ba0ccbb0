package harbor

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestBaseImages: the FROM images an import must find in the local store, and only
// those (not scratch, an earlier stage, a build argument, a comment or a continued line).
func TestBaseImages(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, dockerfile string
		want             []BaseImage
	}{
		{"harbor's simple task", "FROM ubuntu:24.04\n\nWORKDIR /app\n", []BaseImage{{1, "ubuntu:24.04"}}},
		{"flags and stages", "from --platform=linux/amd64 golang:1.24 AS build\nRUN go build\nFROM build AS again\nFROM debian:12-slim\nCOPY --from=build /x /x\n",
			[]BaseImage{{1, "golang:1.24"}, {4, "debian:12-slim"}}},
		{"no store image", "FROM scratch\n# FROM commented:1\nFROM $BASE\nRUN echo \\\n  FROM not-an-instruction\n", nil},
		{"CRLF and indent", "  FROM alpine:3.20\r\nRUN true\r\n", []BaseImage{{1, "alpine:3.20"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tc.want, BaseImages(tc.dockerfile)); diff != "" {
				t.Errorf("BaseImages (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReplaceBaseImages: a mapped FROM image is replaced (flags and stage name kept),
// an unmapped one and every other line are kept byte for byte.
func TestReplaceBaseImages(t *testing.T) {
	t.Parallel()
	in := "# syntax=docker/dockerfile:1\nFROM --platform=linux/amd64 ubuntu:24.04 AS base\nWORKDIR /app\nFROM base\nFROM  debian:12\nRUN echo ubuntu:24.04\n"
	got := ReplaceBaseImages(in, map[string]string{"ubuntu:24.04": "localhost/my-ubuntu:24.04"})
	want := "# syntax=docker/dockerfile:1\nFROM --platform=linux/amd64 localhost/my-ubuntu:24.04 AS base\nWORKDIR /app\nFROM base\nFROM  debian:12\nRUN echo ubuntu:24.04\n"
	if got != want {
		t.Errorf("ReplaceBaseImages:\n%s\nwant:\n%s", got, want)
	}
	if got := ReplaceBaseImages(in, nil); got != in {
		t.Errorf("without a mapping the Dockerfile changed:\n%s", got)
	}
}
