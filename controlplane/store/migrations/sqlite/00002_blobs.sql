-- +goose Up
CREATE TABLE blobs (
    company_id TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    byte_size INTEGER NOT NULL,
    content BLOB NOT NULL,
    PRIMARY KEY (company_id, sha256)
);
-- +goose Down
DROP TABLE blobs;
