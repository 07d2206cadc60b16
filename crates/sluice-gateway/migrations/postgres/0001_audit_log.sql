-- One row per decision (sluice_core::audit::AuditRecord): names, codes,
-- times and a size bucket only, never payloads. Read newest first by
-- (time_ms, id), optionally by upstream or decision.
CREATE TABLE audit_log (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    time_ms BIGINT NOT NULL,
    principal TEXT NOT NULL,
    method TEXT NOT NULL,
    upstream TEXT,
    target TEXT,
    decision TEXT NOT NULL,
    code BIGINT,
    duration_us BIGINT NOT NULL,
    size TEXT
);

CREATE INDEX audit_log_time ON audit_log (time_ms, id);
CREATE INDEX audit_log_upstream_time ON audit_log (upstream, time_ms, id);
CREATE INDEX audit_log_decision_time ON audit_log (decision, time_ms, id);
