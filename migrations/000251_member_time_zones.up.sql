-- A member may choose the time zone the dashboard writes times in for
-- them; without one, the tenant's time zone applies.
CREATE TABLE member_time_zones (
    tenant_id  uuid NOT NULL,
    member_id  uuid NOT NULL,
    time_zone  text NOT NULL CHECK (length(time_zone) BETWEEN 1 AND 64),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, member_id),
    FOREIGN KEY (tenant_id, member_id) REFERENCES members (tenant_id, id) ON DELETE CASCADE
);
