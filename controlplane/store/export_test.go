package store

import "context"

// PragmaText reads PRAGMA name through the instance's one connection (tests only).
func PragmaText(ctx context.Context, in *Instance, name string) (string, error) {
	var v string
	err := in.db.QueryRowContext(ctx, "PRAGMA "+name).Scan(&v)
	return v, err
}
