package signame

import "embed"

// Sources holds this package's Go source files as built (test files included; callers
// filter them). The guarded fixture worker's execution manifest hashes them (docs/fixture-worker.md,
// "Manifest closure": the worker depends on this package).
//
//go:embed *.go
var Sources embed.FS
