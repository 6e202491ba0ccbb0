package container

import (
	"context"
	"fmt"
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
