package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/storage/postgres/pgtest"
)

// TestNginxExampleTerminatesTLS runs deploy/nginx/visor.conf as shipped —
// only the addresses, the certificate paths and the upstream port changed
// — in a real nginx in front of a real `visor serve`, and checks what the
// docs promise: HTTPS to Visor, HTTP redirected to HTTPS, HSTS, /metrics
// not public, and oversized bodies refused at the edge.
func TestNginxExampleTerminatesTLS(t *testing.T) {
	t.Parallel()
	nginx, err := exec.LookPath("nginx")
	if err != nil {
		pgtest.Unavailable(t, "nginx (apt-get install nginx-light)", err)
	}
	needRedis(t)
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o755))
	certPEM, keyPEM, pool := selfSigned(t, "visor.example.com")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "fullchain.pem"), certPEM, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "privkey.pem"), keyPEM, 0o600))

	serve := startCmd(t, testEnv(t, pgtest.NewURL(t), "VISOR_BASE_URL", "https://visor.example.com",
		"VISOR_TRUSTED_PROXIES", "127.0.0.1/32"), "serve")
	httpsPort, httpPort := freePort(t), freePort(t)

	raw, err := os.ReadFile("../../deploy/nginx/visor.conf")
	require.NoError(t, err)
	conf := string(raw)
	for old, new := range map[string]string{
		"server 127.0.0.1:8080;":               "server 127.0.0.1:" + portOf(t, serve.base) + ";",
		"listen 80;":                           "listen 127.0.0.1:" + httpPort + ";",
		"listen 443 ssl http2;":                "listen 127.0.0.1:" + httpsPort + " ssl http2;",
		"/etc/ssl/visor/fullchain.pem":         filepath.Join(dir, "fullchain.pem"),
		"/etc/ssl/visor/privkey.pem":           filepath.Join(dir, "privkey.pem"),
		"return 301 https://$host$request_uri": "return 301 https://$host:" + httpsPort + "$request_uri",
	} {
		require.Contains(t, conf, old, "the example changed; update this test")
		conf = strings.Replace(conf, old, new, 1)
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "visor.conf"), []byte(conf), 0o644))
	main := fmt.Sprintf(`daemon off;
master_process off;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log warn;
events {}
http {
  access_log off;
  client_body_temp_path %[1]s/body;
  proxy_temp_path %[1]s/proxy;
  include %[1]s/visor.conf;
}
`, dir)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(main), 0o644))
	out, err := exec.Command(nginx, "-t", "-p", dir, "-c", filepath.Join(dir, "nginx.conf")).CombinedOutput()
	require.NoError(t, err, "nginx -t: %s", out)

	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, nginx, "-p", dir, "-c", filepath.Join(dir, "nginx.conf"))
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })

	dial := func(_ context.Context, network, addr string) (net.Conn, error) {
		_, port, _ := net.SplitHostPort(addr)
		return net.Dial(network, "127.0.0.1:"+port)
	}
	client := &http.Client{
		Transport: &http.Transport{DialContext: func(ctx context.Context, n, a string) (net.Conn, error) { return dial(ctx, n, a) },
			TLSClientConfig: &tls.Config{RootCAs: pool}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout:       10 * time.Second,
	}
	base := "https://visor.example.com:" + httpsPort
	var res *http.Response
	require.Eventually(t, func() bool {
		res, err = client.Get(base + "/readyz")
		return err == nil
	}, 10*time.Second, 100*time.Millisecond, "nginx did not answer: %v", err)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.NotEmpty(t, res.Header.Get("X-Request-Id"), "the answer comes from Visor")
	require.Contains(t, res.Header.Get("Strict-Transport-Security"), "max-age=")

	res, err = client.Get("http://visor.example.com:" + httpPort + "/healthz")
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusMovedPermanently, res.StatusCode)
	require.Equal(t, base+"/healthz", res.Header.Get("Location"))

	res, err = client.Get(base + "/metrics")
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusNotFound, res.StatusCode, "/metrics is not public")

	res, err = client.Post(base+"/api/v1/tenants", "application/json", strings.NewReader(strings.Repeat("x", 2<<20)))
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusRequestEntityTooLarge, res.StatusCode)
}

func selfSigned(t *testing.T, host string) (certPEM, keyPEM []byte, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: host}, DNSNames: []string{host},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	kb, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), pool
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return portOf(t, "http://"+l.Addr().String())
}
