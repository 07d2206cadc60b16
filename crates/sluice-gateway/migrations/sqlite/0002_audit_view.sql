-- The [[view]] a request came through (NULL: the whole federation); rows
-- written before views existed keep NULL. Read newest first by view too.
ALTER TABLE audit_log ADD COLUMN view TEXT;

CREATE INDEX audit_log_view_time ON audit_log (view, time_ms, id);
