package cli

import (
	"context"
	"fmt"
	"os"

	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/environment"
	"github.com/agentproof/agentproof/environment/container"
)

// pinImages resolves, before the campaign is planned, the image of every container
// environment of cells that names it by config.imageFrom (an image the harness builds
// on this machine: container.BusyboxSource), and pins it by digest as config.image,
// which makes it part of the suite definition (catalog.PinEnvironmentConfig) and of
// every result's launch facts. An image already built is reused. It returns, for each
// environment it could not pin, why (the engine missing, busybox-static not installed,
// the import failing): its cells are then not run here (notRunHere).
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
	var img container.Image
	var err error
	switch {
	case !ok || eng.Name != container.EnginePodman:
		err = fmt.Errorf("podman is not installed")
	case os.Geteuid() != 0:
		err = fmt.Errorf("the container provider needs root here")
	default:
		img, err = eng.BusyboxImage(ctx)
	}
	for _, env := range envs {
		if err == nil {
			err = c.PinEnvironmentConfig(env, "image", img.Ref)
		}
		if err != nil {
			failed[env.ID] = "its image (" + container.BusyboxSource + ") could not be built here: " + err.Error()
		}
	}
	return failed
}

func containsEnv(envs []*catalog.Environment, env *catalog.Environment) bool {
	for _, e := range envs {
		if e == env {
			return true
		}
	}
	return false
}
