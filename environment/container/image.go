package container

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Image is an image in the engine's local store.
//
//   - Ref: how the provider names it, <name>@sha256:<64 hex> (the manifest digest:
//     what runs is exactly this content, whatever a tag says later).
//   - ID: the engine's image id (the config digest, sha256:<64 hex>).
type Image struct {
	Ref string `json:"ref"`
	ID  string `json:"id"`
}

var imageRefRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[a-z0-9]+(?:[._:/-]+[a-z0-9]+)*@sha256:[0-9a-f]{64}$`)
})

// ImageRefProblem says what is wrong with ref as an image the provider runs: it must
// name its digest (<name>@sha256:<64 hex>); a tag alone is refused. "" when ref is valid.
func ImageRefProblem(ref string) string {
	switch {
	case ref == "":
		return "an image is required (<name>@sha256:<64 hex>)"
	case !strings.Contains(ref, "@"):
		return fmt.Sprintf("image %q has no digest: a tag alone names whatever was pushed last; name it as <name>@sha256:<64 hex> "+
			"(`podman image inspect --format '{{.Digest}}' %s` gives it)", clip(ref), clip(ref))
	case !imageRefRE().MatchString(ref):
		return fmt.Sprintf("image %q is not <name>@sha256:<64 lower-case hex>", clip(ref))
	}
	return ""
}

// Inspect returns the local image ref names (by digest or by any name the engine
// knows); an error when the engine does not have it (it never pulls). With podman the
// digest is the image's manifest digest; with docker, whose local images have none
// until pushed, it is the image id (the digest of the image's configuration, which
// names every layer's content digest: as immutable), unless ref is a pulled image's
// manifest digest (see dockerInspect).
func (e Engine) Inspect(ctx context.Context, ref string) (Image, error) {
	if e.Name == EngineDocker {
		return e.dockerInspect(ctx, ref)
	}
	out, err := e.run(ctx, "image", "inspect", "--format", "{{.Id}} {{.Digest}}", ref)
	if err != nil {
		return Image{}, fmt.Errorf("image %s is not in the engine's local store (it is never pulled): %w", ref, err)
	}
	f := strings.Fields(out)
	if len(f) != 2 || !strings.HasPrefix(f[1], "sha256:") {
		return Image{}, fmt.Errorf("image %s: the engine reported %q, not an id and a digest", ref, clip(out))
	}
	name := ref
	if i := strings.Index(name, "@"); i >= 0 {
		name = name[:i]
	}
	id := f[0]
	if !strings.HasPrefix(id, "sha256:") {
		id = "sha256:" + id
	}
	return Image{Ref: name + "@" + f[1], ID: id}, nil
}

// HasImage reports whether the engine's local store has ref (`image exists`: it
// never pulls; docker has no such command: its image is looked up as Inspect does, and
// a miss is one while its daemon answers); an error when the engine could not say.
func (e Engine) HasImage(ctx context.Context, ref string) (bool, error) {
	if e.Name == EngineDocker {
		if _, err := e.dockerInspect(ctx, ref); err == nil {
			return true, nil
		}
		if _, err := e.run(ctx, "version", "--format", "{{.Server.Version}}"); err != nil {
			return false, fmt.Errorf("image %s: %w", ref, err)
		}
		return false, nil
	}
	_, err := e.run(ctx, "image", "exists", ref)
	switch {
	case err == nil:
		return true, nil
	case exitCode(err) == 1:
		return false, nil
	}
	return false, fmt.Errorf("image %s: %w", ref, err)
}

// BuildRequest is an image to build with the engine.
//
//   - Context: the build context directory (absolute).
//   - Dockerfile: the Dockerfile (Containerfile) path, "" for Context/Dockerfile.
//   - Name: the image's name, without tag or digest ("localhost/harbor-task-x").
//
// Podman's build never pulls: every base image must be in the local store already
// (FROM scratch needs none); docker's has no such switch and pulls a base it lacks.
type BuildRequest struct {
	Context    string
	Dockerfile string
	Name       string
}

// Build builds req with the engine (an unchanged context is served from the engine's
// layer cache) and returns the built image by digest. Errors name the step and carry
// the engine's message.
func (e Engine) Build(ctx context.Context, req BuildRequest) (Image, error) {
	if !filepath.IsAbs(req.Context) || req.Name == "" || strings.ContainsAny(req.Name, "@") {
		return Image{}, fmt.Errorf("build: context %q must be absolute and name %q set, without a digest", req.Context, req.Name)
	}
	file := req.Dockerfile
	if file == "" {
		file = filepath.Join(req.Context, "Dockerfile")
	}
	idFile, err := os.CreateTemp("", "agentproof-iid-")
	if err != nil {
		return Image{}, fmt.Errorf("build: %w", err)
	}
	_ = idFile.Close()
	defer os.Remove(idFile.Name())
	args := []string{"build", "--pull=never", "--quiet", "--iidfile", idFile.Name(), "-f", file, "-t", req.Name, req.Context}
	if e.Name == EngineDocker {
		args = slices.Delete(args, 1, 2) // docker's build has no --pull=never: it pulls a base it lacks when a registry answers
	}
	if _, err := e.run(ctx, args...); err != nil {
		return Image{}, fmt.Errorf("build %s: %w", req.Name, err)
	}
	id, err := os.ReadFile(idFile.Name())
	if err != nil {
		return Image{}, fmt.Errorf("build %s: %w", req.Name, err)
	}
	img, err := e.Inspect(ctx, strings.TrimSpace(string(id)))
	if err != nil {
		return Image{}, err
	}
	img.Ref = req.Name + img.Ref[strings.Index(img.Ref, "@"):]
	return img, nil
}

// Import makes an image named name from a root file system tar archive (`import`: one
// layer, no base, nothing pulled) and returns it by digest.
func (e Engine) Import(ctx context.Context, tarball, name string) (Image, error) {
	args := []string{"import", "--quiet", tarball, name}
	if e.Name == EngineDocker {
		args = slices.Delete(args, 1, 2) // docker's import prints only the id anyway
	}
	id, err := e.run(ctx, args...)
	if err != nil {
		return Image{}, fmt.Errorf("import %s: %w", tarball, err)
	}
	img, err := e.Inspect(ctx, strings.TrimSpace(id))
	if err != nil {
		return Image{}, err
	}
	repo := name
	if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
		repo = repo[:i] // the tag; the image is named by its digest
	}
	img.Ref = repo + img.Ref[strings.Index(img.Ref, "@"):]
	return img, nil
}

func clip(s string) string {
	if r := []rune(s); len(r) > 80 {
		return string(r[:79]) + "…"
	}
	return s
}
