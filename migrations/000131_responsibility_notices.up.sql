-- Pushing questions to operators. A responsibility's notify settings say
-- whether and where its questions are pushed (a signed webhook), what a
-- question the injection scan flagged pushes, the quiet hours in the
-- tenant's time zone, and how many pushes one window allows. Each question
-- of a responsibility that pushes gets one notice row: queued, held for
-- quiet hours, sent, refused by a gate (with the reason), failed after its
-- retries, or withdrawn when the question settled first.

ALTER TABLE responsibilities ADD COLUMN notify_enabled boolean NOT NULL DEFAULT false;
ALTER TABLE responsibilities ADD COLUMN notify_url text NOT NULL DEFAULT '' CHECK (length(notify_url) <= 2000);
-- notify_secret is the webhook's signing key (HMAC), shown to the operator
-- once when the URL is set.
ALTER TABLE responsibilities ADD COLUMN notify_secret bytea;
ALTER TABLE responsibilities ADD COLUMN notify_flagged text NOT NULL DEFAULT 'notice' CHECK (notify_flagged IN ('notice', 'skip'));
-- Quiet hours as minutes after local midnight; both NULL when there are none.
ALTER TABLE responsibilities ADD COLUMN notify_quiet_start smallint CHECK (notify_quiet_start BETWEEN 0 AND 1439);
ALTER TABLE responsibilities ADD COLUMN notify_quiet_end smallint CHECK (notify_quiet_end BETWEEN 0 AND 1439);
ALTER TABLE responsibilities ADD COLUMN notify_max_per_window integer NOT NULL DEFAULT 10 CHECK (notify_max_per_window BETWEEN 1 AND 1000);
ALTER TABLE responsibilities ADD CONSTRAINT responsibilities_notify_quiet
    CHECK ((notify_quiet_start IS NULL) = (notify_quiet_end IS NULL));
ALTER TABLE responsibilities ADD CONSTRAINT responsibilities_notify_target
    CHECK (NOT notify_enabled OR (notify_url <> '' AND notify_secret IS NOT NULL));

CREATE TABLE responsibility_notices (
    tenant_id         uuid NOT NULL,
    id                uuid NOT NULL,
    responsibility_id uuid NOT NULL,
    question_id       uuid NOT NULL,
    state             text NOT NULL CHECK (state IN ('queued', 'held', 'sent', 'refused', 'failed', 'withdrawn')),
    -- reason: why a gate refused it or held it, or why it was withdrawn.
    reason            text NOT NULL DEFAULT '' CHECK (length(reason) <= 40),
    -- content: what the push carries, the quoted question or only a notice.
    content           text NOT NULL CHECK (content IN ('text', 'notice')),
    send_at           timestamptz NOT NULL,
    attempts          integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    last_error        text NOT NULL DEFAULT '' CHECK (length(last_error) <= 500),
    created_at        timestamptz NOT NULL DEFAULT now(),
    settled_at        timestamptz,
    PRIMARY KEY (tenant_id, id),
    UNIQUE (tenant_id, question_id),
    FOREIGN KEY (tenant_id, responsibility_id) REFERENCES responsibilities (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, question_id) REFERENCES responsibility_wakeups (tenant_id, id) ON DELETE CASCADE,
    CHECK ((state IN ('queued', 'held')) = (settled_at IS NULL))
);

-- Operators list a responsibility's notices newest first; the per-window
-- cap counts them by creation time.
CREATE INDEX responsibility_notices_by_time ON responsibility_notices (tenant_id, responsibility_id, created_at DESC, id DESC);
