package cli

import (
	"context"
	"fmt"
	"os"

	"github.com/agentproof/agentproof/agent/clis"
	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/environment"
	"github.com/agentproof/agentproof/environment/container"
)

// pinImages resolves, before the campaign is planned, the image of every container
// environment of cells that names it by config.imageFrom (an image the harness builds
// on this machine: container.BusyboxSource, or container.NodeSource from the Node.js
// on this process's PATH, the one the pinned Node.js CLIs run on), and pins it by
// digest as config.image, which makes it part of the suite definition
// (catalog.PinEnvironmentConfig) and of every result's launch facts. An image already
// built is reused; each source is built once per call. It returns, for each
// environment it could not pin, why (the engine missing, busybox-static or Node.js not
// installed, the import failing): its cells are then not run here (notRunHere).
func pinImages(ctx context.Context, c *catalog.Catalog, cells []*catalog.Cell) map[string]string {
	var envs []*catalog.Environment
	for _, cell := range cells {
		env := cell.Environment
		if _, from := env.Config["imageFrom"]; from && environment.ProviderName(env.Provider) == environment.ProviderContainer {
			if _, pinned := env.Config["image"]; !pinned && !containsEnv(envs, env) {
				envs = append(envs, env)
			}
		}
	}
	if len(envs) == 0 {
		return nil
	}
	failed := map[string]string{}
	eng, ok := container.FindEngine()
	type built struct {
		img container.Image
		err error
	}
	images := map[string]built{}
	for _, env := range envs {
		from, _ := env.Config["imageFrom"].(string)
		b, done := images[from]
		switch {
		case done:
		case !ok:
			b.err = fmt.Errorf("neither podman nor docker is installed")
		case os.Geteuid() != 0:
			b.err = fmt.Errorf("the container provider needs root here")
		default:
			b.img, b.err = buildImage(ctx, eng, from)
		}
		images[from] = b
		err := b.err
		if err == nil {
			err = c.PinEnvironmentConfig(env, "image", b.img.Ref)
		}
		if err != nil {
			failed[env.ID] = "its image (" + from + ") could not be built here: " + err.Error()
		}
	}
	return failed
}

// buildImage builds (or finds already built) the image of the imageFrom value from.
func buildImage(ctx context.Context, eng container.Engine, from string) (container.Image, error) {
	if from != container.NodeSource {
		return eng.BusyboxImage(ctx)
	}
	node, err := clis.Node(ctx, os.Environ())
	if err != nil {
		return container.Image{}, err
	}
	return eng.NodeImage(ctx, node)
}

func containsEnv(envs []*catalog.Environment, env *catalog.Environment) bool {
	for _, e := range envs {
		if e == env {
			return true
		}
	}
	return false
}
