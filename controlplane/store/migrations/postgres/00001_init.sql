-- +goose Up
CREATE TABLE instance_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE companies (id TEXT PRIMARY KEY, ordinal BIGINT NOT NULL UNIQUE);
CREATE TABLE journal (
    company_id TEXT NOT NULL,
    seq BIGINT NOT NULL,
    op TEXT NOT NULL,
    input BYTEA NOT NULL,
    PRIMARY KEY (company_id, seq)
);
CREATE TABLE snapshots (
    company_id TEXT NOT NULL,
    seq BIGINT NOT NULL,
    state BYTEA NOT NULL,
    PRIMARY KEY (company_id, seq)
);
CREATE TABLE secrets (
    company_id TEXT NOT NULL,
    id TEXT NOT NULL,
    name TEXT NOT NULL,
    key TEXT NOT NULL,
    version BIGINT NOT NULL,
    nonce BYTEA NOT NULL,
    ciphertext BYTEA NOT NULL,
    PRIMARY KEY (company_id, id, version)
);
-- +goose Down
DROP TABLE secrets;
DROP TABLE snapshots;
DROP TABLE journal;
DROP TABLE companies;
DROP TABLE instance_meta;
