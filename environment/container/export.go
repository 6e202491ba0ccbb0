package container

import (
	"context"
	"fmt"
	"path"
	"path/filepath"
	"strings"
)

// WorkingDir is the working directory an image declares (its Dockerfile's WORKDIR,
// e.g. "/app"); "" when it declares none. Errors: the image is not in the local store.
func (e Engine) WorkingDir(ctx context.Context, ref string) (string, error) {
	out, err := e.run(ctx, "image", "inspect", "--format", "{{.Config.WorkingDir}}", ref)
	if err != nil {
		return "", fmt.Errorf("image %s: %w", ref, err)
	}
	return strings.TrimSpace(out), nil
}

// CopyOut copies the content of dir in image ref (an absolute directory) into the
// existing host directory dest: a container is created from the image (never started,
// never pulled), the directory copied out of it and the container removed. Errors
// carry the engine's message.
func (e Engine) CopyOut(ctx context.Context, ref, dir, dest string) (err error) {
	if !path.IsAbs(dir) || path.Clean(dir) != dir || !filepath.IsAbs(dest) {
		return fmt.Errorf("copy out: %q and %q must be absolute", dir, dest)
	}
	id, err := e.run(ctx, "create", "--pull", "never", "--network", "none", ref, "/bin/true")
	if err != nil {
		return fmt.Errorf("copy %s out of %s: %w", dir, ref, err)
	}
	defer func() {
		if _, rerr := e.run(context.WithoutCancel(ctx), "rm", "--force", id); rerr != nil && err == nil {
			err = fmt.Errorf("copy %s out of %s: removing the container: %w", dir, ref, rerr)
		}
	}()
	src := strings.TrimSuffix(dir, "/") + "/."
	if _, err := e.run(ctx, "cp", id+":"+src, dest); err != nil {
		return fmt.Errorf("copy %s out of %s: %w", dir, ref, err)
	}
	return nil
}
