-- +goose Up
-- A secret's kind: env (a value bound to an agent's environment variable) or
-- login_file (a CLI's login file, seeded into a company-scoped HOME; never an
-- environment value). docs/secrets.md "Login files".
ALTER TABLE secrets ADD COLUMN kind TEXT NOT NULL DEFAULT 'env';
-- +goose Down
ALTER TABLE secrets DROP COLUMN kind;
