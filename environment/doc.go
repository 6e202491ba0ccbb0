// Package environment is the provider contract of agentproof's execution environments
// (every provider implements the same setup/probe/cleanup contract;
// docs/environments.md is the design note).
//
// A Provider turns an environment of the catalog into places an agent's process runs:
//
//   - Probe says whether this machine can run the provider at all and what it found
//     (kernel features, tool versions), as a ProbeReport of named checks.
//   - Setup creates a Lease: an id, the environment id, the pinned resource Shape, a
//     start time and whatever host resources the provider holds for it (a sandbox: a
//     cgroup, a size-capped writable disk, bridge sockets). A lease is described by a
//     JSON file (lease.json in the lease directory) so that another process (the
//     serve child's heartbeat runner) can launch into it and a later process can clean
//     it up; see ReadLeaseFile.
//   - Launch turns the worker.Spec a driver built into the Spec the worker supervises
//     inside the lease (Launched.Spec), and Launched.Settle turns the worker's Outcome
//     back into the agent's own outcome plus the limits the host observed it hit.
//   - Cleanup destroys the lease and reports whether destruction was confirmed and
//     what it found and what remained (processes, mounts, files, cgroups).
//
// Providers live in sub-packages (environment/local, environment/sandbox); this
// package holds only the shared types, the lease file and the lease record that goes
// into result.json with its runtime billing.
package environment
