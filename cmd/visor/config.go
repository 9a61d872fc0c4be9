package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Config is everything the visor binary reads from its environment. Every
// field comes from one VISOR_* variable (OTLP from the standard OTEL_*
// one) and has a default that works on a developer machine.
type Config struct {
	DatabaseURL       string          // VISOR_DATABASE_URL
	RedisURL          string          // VISOR_REDIS_URL
	HTTPAddr          string          // VISOR_HTTP_ADDR
	BaseURL           string          // VISOR_BASE_URL; derived from the listen address when empty
	LogLevel          slog.Level      // VISOR_LOG_LEVEL
	LogFormat         string          // VISOR_LOG_FORMAT: json or text
	BodyLimit         int64           // VISOR_HTTP_BODY_LIMIT, bytes
	ShutdownTimeout   time.Duration   // VISOR_SHUTDOWN_TIMEOUT
	AdminToken        string          // VISOR_ADMIN_TOKEN: platform admin bearer token; empty disables
	WorkerConcurrency int             // VISOR_WORKER_CONCURRENCY
	DevDir            string          // VISOR_DEV_DIR: where `visor dev` keeps its credentials
	WorkerHTTPAddr    string          // VISOR_WORKER_HTTP_ADDR: health and metrics of `visor worker`; empty disables
	OTLPEndpoint      string          // OTEL_EXPORTER_OTLP_ENDPOINT: export traces over OTLP/HTTP when set
	LiveReconcile     time.Duration   // VISOR_LIVE_RECONCILE_EVERY
	LiveCredentials   time.Duration   // VISOR_LIVE_CREDENTIAL_CHECK_EVERY
	TrustedProxies    []*net.IPNet    // VISOR_TRUSTED_PROXIES: whose X-Forwarded-For is believed
	MCPOrigins        []string        // VISOR_MCP_ALLOWED_ORIGINS: browser origins that may call the MCP endpoint
	OAuth             OAuthConfig     // VISOR_OAUTH_* (see oauth.go)
	Rounds            RoundsConfig    // VISOR_WEBHOOK_*, VISOR_ROUND_TTL, VISOR_WORKER_RESCUE_AFTER (see rounds.go)
	Computer          ComputerConfig  // VISOR_COMPUTER_* (see computer.go)
	Workspace         WorkspaceConfig // VISOR_WORKSPACE_* (see workspace.go)
	Sandbox           SandboxConfig   // VISOR_SANDBOX_*, VISOR_WORKER_ID (see sandbox.go)
	Secrets           SecretsConfig   // VISOR_SECRET_KEYS, VISOR_DB_ALLOWED_NETWORKS (see dbsources.go)
	HandoffMaxBytes   int             // VISOR_HANDOFF_MAX_BYTES: cap of one working_state_handoff, bytes of UTF-8
	Scale             ScaleConfig     // stream, connection, pool and queue limits (see scale.go)

	// Upstreams is VISOR_MCP_DEV_HOSTS and VISOR_MCP_UPSTREAM_IDLE (see
	// upstreams.go).
	Upstreams UpstreamsConfig
	// dbPool, when set, is the Postgres pool's size (the worker's).
	dbPool int32
}

// envVar documents one variable: the README's configuration table is this
// list.
type envVar struct {
	Name, Default, Help string
}

var envVars = []envVar{
	{"VISOR_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/visor?sslmode=disable", "Postgres URL (source of truth)"},
	{"VISOR_REDIS_URL", "redis://127.0.0.1:6379/0", "Redis URL (change events, caches, rate limits)"},
	{"VISOR_HTTP_ADDR", ":8080", "listen address of `serve` and `dev` (port 0 picks a free port)"},
	{"VISOR_BASE_URL", "", "public URL of this deployment, e.g. https://visor.example.com; default http://localhost:<port>"},
	{"VISOR_LOG_LEVEL", "info", "debug, info, warn or error"},
	{"VISOR_LOG_FORMAT", "json", "json or text (`visor dev` defaults to text)"},
	{"VISOR_HTTP_BODY_LIMIT", "1048576", "largest request body in bytes"},
	{"VISOR_SHUTDOWN_TIMEOUT", "30s", "how long a graceful shutdown may take"},
	{"VISOR_ADMIN_TOKEN", "", "platform admin token for creating tenants over the API (32+ characters); empty disables"},
	{"VISOR_WORKER_CONCURRENCY", "10", "jobs of the default queue (housekeeping) one worker process runs at once"},
	{"VISOR_WORKER_ROUNDS_CONCURRENCY", "200", "wake-up delivery attempts (webhook pushes) one worker process has in flight at once; they hold no database connection while they push, and their outcomes are recorded a set at a time"},
	{"VISOR_WORKER_RESPONSIBILITIES_CONCURRENCY", "20", "responsibility jobs (follow-ups, question pushes; scheduled runs are claimed in sets apart from it) one worker process runs at once"},
	{"VISOR_WORKER_DB_POOL", "40", "Postgres connections of one `visor worker` (its queues' jobs share them; overrides pool_max_conns in the URL)"},
	{"VISOR_MCP_MAX_STREAMS", "0", "notification streams one replica holds; over it a stream is refused (503, Retry-After) and /readyz fails at nine tenths; 0: derived from the open-file limit"},
	{"VISOR_MCP_MAX_STREAMS_PER_CREDENTIAL", "1000", "notification streams one credential holds on one replica; over it a stream is refused (429, Retry-After); 0: no limit"},
	{"VISOR_HTTP_MAX_CONNECTIONS", "0", "HTTP connections one process holds; beyond it a connection is closed at once; 0: derived from the open-file limit"},
	{"VISOR_HTTP_H2C", "false", "true: also serve HTTP/2 without TLS (prior knowledge, for a load balancer that speaks HTTP/2 to its backends) beside HTTP/1.1; many streams then share a connection, so VISOR_MCP_MAX_STREAMS may exceed the connection limit"},
	{"VISOR_DEV_DIR", ".dev", "where `visor dev` keeps its demo credentials"},
	{"VISOR_WORKER_HTTP_ADDR", "", "listen address for `visor worker`'s /healthz, /readyz and /metrics, e.g. :9090; empty disables"},
	{"VISOR_TRUSTED_PROXIES", "", "comma-separated CIDRs of load balancers whose X-Forwarded-For names the client (rate limits, logs); empty: the peer address"},
	{"VISOR_MCP_ALLOWED_ORIGINS", "", "comma-separated browser origins (https://app.example.com) that may call the MCP endpoint besides pages on its own host; CORS is answered for exactly these"},
	{"VISOR_LIVE_RECONCILE_EVERY", "2s", "how often each replica compares its live streams' tenants with Postgres (repairs lost change events)"},
	{"VISOR_LIVE_CREDENTIAL_CHECK_EVERY", "30s", "how often each replica re-checks the credential of every live stream, closing those revoked or expired (revocation events close them at once)"},
	{"VISOR_OAUTH_HMAC_SECRET", "", "secret (32+ characters) signing OAuth codes and tokens; empty: one is generated once and kept in Postgres"},
	{"VISOR_OAUTH_ACCESS_TOKEN_TTL", "1h", "lifetime of OAuth access tokens"},
	{"VISOR_OAUTH_REFRESH_TOKEN_TTL", "720h", "lifetime of OAuth refresh tokens (rotated on every use)"},
	{"VISOR_OAUTH_CIMD_DEV_HOSTS", "", "development only: comma-separated hosts whose client metadata documents may be fetched from private or loopback addresses"},
	{"VISOR_WEBHOOK_DEV_HOSTS", "", "development only: comma-separated hosts whose runtime webhook endpoints may use http and private or loopback addresses"},
	{"VISOR_WEBHOOK_CA_FILE", "", "PEM file of extra certificate authorities trusted for runtime webhook endpoints (private CAs, tests); empty: the system roots"},
	{"VISOR_WEBHOOK_TIMEOUT", "10s", "how long one webhook delivery to a runtime may take"},
	{"VISOR_ROUND_TTL", "1h", "the longest a round, and its round token, lives (it ends earlier when its task is finished, blocked or reassigned)"},
	{"VISOR_WORKER_ROUNDS_CLAIMERS", "2", "claim loops of one `visor worker` that lease due wake-ups in sets (FOR UPDATE SKIP LOCKED) for delivery"},
	{"VISOR_WORKER_ROUNDS_BATCH", "500", "the most wake-ups one claim leases (fewer when fewer delivery attempts may start)"},
	{"VISOR_WORKER_ROUNDS_POLL", "100ms", "how often an idle claim loop looks for wake-ups whose next attempt is due (10ms-1m)"},
	{"VISOR_WORKER_ROUNDS_LEASE", "2m", "how long a claimed wake-up stays with its worker before another may take it (a stalled worker's); at least VISOR_WEBHOOK_TIMEOUT and 15s. A lost worker's leases are released within seconds by its heartbeat"},
	{"VISOR_WORKER_RESCUE_AFTER", "2m", "how long a job may stay running past its own timeout before another worker takes it over (a killed worker's jobs)"},
	{"VISOR_COMPUTER_WORKER", "false", "true: this `visor worker` holds the Docker socket and runs computer-use browser sessions (needs VISOR_COMPUTER_IMAGE); serve reaches it over the worker plane"},
	{"VISOR_COMPUTER_IMAGE", "", "the computer-use browser image (deploy/browser), never pulled; read by computer workers"},
	{"VISOR_COMPUTER_MAX_SESSIONS", "8", "browser sessions one computer worker holds at once (each up to 1 GiB of memory and one CPU)"},
	{"VISOR_COMPUTER_SWEEP_EVERY", "30s", "how often a computer worker's janitor stops idle sessions and removes the containers of workers that stopped answering (after two sweeps in a row)"},
	{"VISOR_COMPUTER_DEV_HOSTS", "", "development only: comma-separated host=address pins the browser egress proxy uses instead of DNS (shop.test=127.0.0.2)"},
	{"VISOR_COMPUTER_DEV_TRUST_SPKI", "", "development only: comma-separated base64 SHA-256 public-key hashes of certificates the session browser accepts unverified (local test sites)"},
	{"VISOR_SECRET_KEYS", "", "key-encryption keys sealing stored secrets (database passwords): comma-separated id:base64-32-bytes, the first encrypts, all decrypt; rotation in docs/secrets.md"},
	{"VISOR_DB_ALLOWED_NETWORKS", "", "comma-separated CIDRs and host names of private networks database sources may reach; other private, loopback and link-local addresses are refused"},
	{"VISOR_MCP_DEV_HOSTS", "", "development only: comma-separated hosts whose upstream MCP servers may use http and private or loopback addresses"},
	{"VISOR_MCP_UPSTREAM_IDLE", "5m", "how long a replica keeps an unused session with an upstream MCP server open"},
	{"VISOR_HANDOFF_MAX_BYTES", "16384", "cap of one working_state_handoff, in bytes of UTF-8 (1024-1048576); a larger hand-off is refused whole, never truncated"},
	{"OTEL_EXPORTER_OTLP_ENDPOINT", "", "OTLP/HTTP collector, e.g. http://localhost:4318; empty disables tracing export"},
}

func defaultOf(name string) string {
	for _, v := range envVars {
		if v.Name == name {
			return v.Default
		}
	}
	panic("undocumented variable " + name)
}

// LoadConfig reads the environment through getenv and validates it. Every
// problem is reported, one line each, naming the variable and what to set.
func LoadConfig(getenv func(string) string) (Config, error) {
	get := func(name string) string {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			return v
		}
		return defaultOf(name)
	}
	var errs []error
	bad := func(name, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", name, fmt.Sprintf(format, args...)))
	}
	c := Config{
		DatabaseURL: get("VISOR_DATABASE_URL"), RedisURL: get("VISOR_REDIS_URL"), HTTPAddr: get("VISOR_HTTP_ADDR"),
		BaseURL: strings.TrimRight(get("VISOR_BASE_URL"), "/"), LogFormat: get("VISOR_LOG_FORMAT"),
		AdminToken: get("VISOR_ADMIN_TOKEN"), DevDir: get("VISOR_DEV_DIR"), WorkerHTTPAddr: get("VISOR_WORKER_HTTP_ADDR"), OTLPEndpoint: get("OTEL_EXPORTER_OTLP_ENDPOINT"),
	}
	if err := checkURL(c.DatabaseURL, "postgres", "postgresql"); err != nil {
		bad("VISOR_DATABASE_URL", "%v; want postgres://user:password@host:5432/dbname", err)
	}
	if err := checkURL(c.RedisURL, "redis", "rediss"); err != nil {
		bad("VISOR_REDIS_URL", "%v; want redis://host:6379/0", err)
	}
	if _, port, err := net.SplitHostPort(c.HTTPAddr); err != nil {
		bad("VISOR_HTTP_ADDR", "%q is not host:port; want something like :8080 or 127.0.0.1:8080", c.HTTPAddr)
	} else if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		bad("VISOR_HTTP_ADDR", "port %q must be a number 0-65535", port)
	}
	if c.WorkerHTTPAddr != "" {
		if _, _, err := net.SplitHostPort(c.WorkerHTTPAddr); err != nil {
			bad("VISOR_WORKER_HTTP_ADDR", "%q is not host:port; want something like :9090", c.WorkerHTTPAddr)
		}
	}
	if c.BaseURL != "" {
		if err := checkURL(c.BaseURL, "http", "https"); err != nil {
			bad("VISOR_BASE_URL", "%v; want https://visor.example.com", err)
		}
	}
	if err := c.LogLevel.UnmarshalText([]byte(get("VISOR_LOG_LEVEL"))); err != nil {
		bad("VISOR_LOG_LEVEL", "%q is not a level; want debug, info, warn or error", get("VISOR_LOG_LEVEL"))
	}
	if c.LogFormat != "json" && c.LogFormat != "text" {
		bad("VISOR_LOG_FORMAT", "%q must be json or text", c.LogFormat)
	}
	for _, cidr := range strings.Split(get("VISOR_TRUSTED_PROXIES"), ",") {
		if cidr = strings.TrimSpace(cidr); cidr == "" {
			continue
		}
		_, n, err := net.ParseCIDR(cidr)
		if err != nil {
			bad("VISOR_TRUSTED_PROXIES", "%q is not a CIDR; want something like 10.0.0.0/8", cidr)
			continue
		}
		c.TrustedProxies = append(c.TrustedProxies, n)
	}
	c.MCPOrigins = parseOrigins(get("VISOR_MCP_ALLOWED_ORIGINS"), func(format string, args ...any) {
		bad("VISOR_MCP_ALLOWED_ORIGINS", format, args...)
	})
	var err error
	if c.BodyLimit, err = strconv.ParseInt(get("VISOR_HTTP_BODY_LIMIT"), 10, 64); err != nil || c.BodyLimit < 1024 {
		bad("VISOR_HTTP_BODY_LIMIT", "%q must be a number of bytes, at least 1024", get("VISOR_HTTP_BODY_LIMIT"))
	}
	if c.ShutdownTimeout, err = time.ParseDuration(get("VISOR_SHUTDOWN_TIMEOUT")); err != nil || c.ShutdownTimeout <= 0 {
		bad("VISOR_SHUTDOWN_TIMEOUT", "%q must be a positive duration like 30s", get("VISOR_SHUTDOWN_TIMEOUT"))
	}
	if c.WorkerConcurrency, err = strconv.Atoi(get("VISOR_WORKER_CONCURRENCY")); err != nil || c.WorkerConcurrency < 1 || c.WorkerConcurrency > 10000 {
		bad("VISOR_WORKER_CONCURRENCY", "%q must be a number 1-10000", get("VISOR_WORKER_CONCURRENCY"))
	}
	if c.LiveReconcile, err = time.ParseDuration(get("VISOR_LIVE_RECONCILE_EVERY")); err != nil || c.LiveReconcile < 100*time.Millisecond {
		bad("VISOR_LIVE_RECONCILE_EVERY", "%q must be a duration of at least 100ms, like 2s", get("VISOR_LIVE_RECONCILE_EVERY"))
	}
	if c.LiveCredentials, err = time.ParseDuration(get("VISOR_LIVE_CREDENTIAL_CHECK_EVERY")); err != nil || c.LiveCredentials < 100*time.Millisecond {
		bad("VISOR_LIVE_CREDENTIAL_CHECK_EVERY", "%q must be a duration of at least 100ms, like 30s", get("VISOR_LIVE_CREDENTIAL_CHECK_EVERY"))
	}
	if c.HandoffMaxBytes, err = strconv.Atoi(get("VISOR_HANDOFF_MAX_BYTES")); err != nil || c.HandoffMaxBytes < 1024 || c.HandoffMaxBytes > 1<<20 {
		bad("VISOR_HANDOFF_MAX_BYTES", "%q must be a number of bytes 1024-1048576", get("VISOR_HANDOFF_MAX_BYTES"))
	}
	if c.AdminToken != "" && len(c.AdminToken) < 32 {
		bad("VISOR_ADMIN_TOKEN", "must be at least 32 characters (try: openssl rand -hex 32), or unset to disable")
	}
	if c.OTLPEndpoint != "" {
		if err := checkURL(c.OTLPEndpoint, "http", "https"); err != nil {
			bad("OTEL_EXPORTER_OTLP_ENDPOINT", "%v; want http://collector:4318", err)
		}
	}
	c.OAuth = loadOAuthConfig(get, bad)
	c.Rounds = loadRoundsConfig(get, bad)
	c.Computer = loadComputerConfig(get, bad)
	c.Workspace = loadWorkspaceConfig(get, bad)
	c.Sandbox = loadSandboxConfig(get, bad)
	c.Secrets = loadSecretsConfig(get, bad)
	c.Scale = loadScaleConfig(get, bad)
	c.Upstreams = loadUpstreamsConfig(get, bad)
	return c, errors.Join(errs...)
}

// checkURL reports a malformed URL or an unexpected scheme without echoing
// the URL, which may hold a password.
func checkURL(raw string, schemes ...string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("the URL is malformed")
	}
	for _, s := range schemes {
		if u.Scheme == s {
			if u.Host == "" {
				return errors.New("the URL has no host")
			}
			return nil
		}
	}
	return fmt.Errorf("scheme %q is not %s", u.Scheme, strings.Join(schemes, " or "))
}

// baseURL is the public URL: VISOR_BASE_URL, or http://localhost:<port> of
// the address actually bound.
func (c Config) baseURL(bound net.Addr) string {
	if c.BaseURL != "" {
		return c.BaseURL
	}
	host := "localhost"
	if ta, ok := bound.(*net.TCPAddr); ok {
		if !ta.IP.IsUnspecified() && !ta.IP.IsLoopback() {
			host = ta.IP.String()
		}
		return fmt.Sprintf("http://%s", net.JoinHostPort(host, strconv.Itoa(ta.Port)))
	}
	return "http://" + bound.String()
}

// parseOrigins reads a comma-separated list of web origins: scheme, host
// and optional port, nothing else, as browsers send them in Origin.
func parseOrigins(list string, bad func(format string, args ...any)) []string {
	var out []string
	for _, o := range strings.Split(list, ",") {
		if o = strings.ToLower(strings.TrimSpace(o)); o == "" {
			continue
		}
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.Path != "" ||
			u.RawQuery != "" || strings.Contains(o, "#") || strings.HasSuffix(o, "?") {
			bad("%q is not an origin; want scheme://host[:port] such as https://app.example.com (no path, no *)", o)
			continue
		}
		out = append(out, o)
	}
	return out
}
