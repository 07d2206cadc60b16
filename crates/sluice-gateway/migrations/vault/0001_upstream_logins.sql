-- One row per OAuth login to an upstream (sluice_core::upstream_auth::LoginRecord),
-- sealed: the tokens and client secret are never stored in the clear.
-- The same SQL serves SQLite and PostgreSQL.
CREATE TABLE upstream_logins (
    principal TEXT NOT NULL,
    upstream TEXT NOT NULL,
    sealed TEXT NOT NULL,
    updated_ms BIGINT NOT NULL,
    PRIMARY KEY (principal, upstream)
);
