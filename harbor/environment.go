package harbor

import "strings"

// environment handles [environment]: the build timeout and the resources are taken; a
// prebuilt image, GPUs and internet access are refused (the image is built locally
// from environment/Dockerfile and never pulled; the agent and the verifier have no
// network but the bridge to the control plane and the scripted model).
func (p *configParser) environment(v any) {
	p.table("environment", v, func(field, k string, val any) {
		switch k {
		case "build_timeout_sec":
			p.cfg.BuildTimeoutSec = p.seconds(field, val)
		case "cpus":
			f, ok := number(val)
			if !ok || f < 1 || f > maxCPUs || f != float64(int(f)) {
				p.add(field, "must be a whole number of CPUs, 1…%d", maxCPUs)
				return
			}
			p.cfg.CPUs = int(f)
		case "memory_mb", "storage_mb":
			p.sizeField(field, k, val, true)
		case "memory", "storage":
			p.sizeField(field, k, val, false)
		case "gpus":
			if f, ok := number(val); !ok || f != 0 {
				p.add(field, "is not supported: GPUs are not given to an agent (only 0 is accepted)")
			}
		case "allow_internet":
			if b, ok := val.(bool); !ok || b {
				p.add(field, "is not supported: the agent and the verifier have no internet access here (only false is accepted)")
				return
			}
			p.cfg.Offline = true
		case "network_mode":
			// Harbor's modes are public, no-network and allowlist; "none" is taken too.
			if s, ok := val.(string); !ok || (s != "no-network" && s != "none") {
				p.add(field, "is not supported: the agent and the verifier have no network here (only \"no-network\" is accepted)")
				return
			}
			p.cfg.Offline = true
		case "docker_image":
			p.add(field, "is not supported: a prebuilt image is pulled from a registry, and agentproof never pulls; it builds environment/Dockerfile with the local engine and pins the image by digest")
		default:
			p.add(field, "is not supported (known: build_timeout_sec, cpus, memory_mb, storage_mb, memory, storage, gpus, allow_internet, network_mode)")
		}
	})
}

// sizeField reads memory_mb/storage_mb (an integer of MiB, mb true) or the older
// memory/storage ("4G"), into the configuration.
func (p *configParser) sizeField(field, key string, v any, mb bool) {
	var n int
	if mb {
		f, ok := number(v)
		if !ok || f < 1 || f > maxSizeMB || f != float64(int(f)) {
			p.add(field, "must be a whole number of MiB, 1…%d", maxSizeMB)
			return
		}
		n = int(f)
	} else {
		s, ok := v.(string)
		if !ok {
			p.add(field, "must be a size such as \"4G\"")
			return
		}
		if n, ok = sizeMB(s); !ok || n < 1 || n > maxSizeMB {
			p.add(field, "%q must be a size such as \"4G\" or \"512M\", at most 1T", s)
			return
		}
	}
	if strings.HasPrefix(key, "memory") {
		p.cfg.MemoryMB = n
	} else {
		p.cfg.StorageMB = n
	}
}
