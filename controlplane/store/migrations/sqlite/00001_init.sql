-- +goose Up
CREATE TABLE instance_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE companies (id TEXT PRIMARY KEY, ordinal INTEGER NOT NULL UNIQUE);
CREATE TABLE journal (
    company_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    op TEXT NOT NULL,
    input BLOB NOT NULL,
    PRIMARY KEY (company_id, seq)
);
CREATE TABLE snapshots (
    company_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    state BLOB NOT NULL,
    PRIMARY KEY (company_id, seq)
);
CREATE TABLE secrets (
    company_id TEXT NOT NULL,
    id TEXT NOT NULL,
    name TEXT NOT NULL,
    key TEXT NOT NULL,
    version INTEGER NOT NULL,
    nonce BLOB NOT NULL,
    ciphertext BLOB NOT NULL,
    PRIMARY KEY (company_id, id, version)
);
-- +goose Down
DROP TABLE secrets;
DROP TABLE snapshots;
DROP TABLE journal;
DROP TABLE companies;
DROP TABLE instance_meta;
