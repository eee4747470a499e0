package localcloud

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nodewright/nodewright/test/localcloud/pki"
	"github.com/nodewright/nodewright/test/localcloud/proc"
)

// component is one server process and how to tell it is ready.
type component struct {
	spec  proc.Spec
	ready func(ctx context.Context) error
}

// ports are the loopback ports of the servers.
type ports struct {
	etcd, etcdPeer, apiserver, kcm, scheduler, kwok, moto int
}

func freePorts() (ports, error) {
	var p ports
	for _, dst := range []*int{&p.etcd, &p.etcdPeer, &p.apiserver, &p.kcm, &p.scheduler, &p.kwok, &p.moto} {
		n, err := freePort()
		if err != nil {
			return p, err
		}
		*dst = n
	}
	return p, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func loopURL(scheme string, port int) string {
	return scheme + "://127.0.0.1:" + strconv.Itoa(port)
}

func etcdComponent(t tools, p ports, dataDir string, quota int64) component {
	client, peer := loopURL("http", p.etcd), loopURL("http", p.etcdPeer)
	args := []string{
		"--name=default", "--data-dir=" + dataDir,
		"--listen-client-urls=" + client, "--advertise-client-urls=" + client,
		"--listen-peer-urls=" + peer, "--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=default=" + peer,
		"--unsafe-no-fsync", "--log-level=warn",
	}
	if quota > 0 {
		args = append(args, "--quota-backend-bytes="+strconv.FormatInt(quota, 10))
	}
	return component{
		spec:  proc.Spec{Name: "etcd", Path: t.bin(toolEtcd), Args: args},
		ready: httpReady(plainClient(), client+"/health", ""),
	}
}

func apiserverComponent(t tools, p ports, k *pki.Files, certDir, tokenWebhookConfig string) component {
	return component{
		spec: proc.Spec{Name: "kube-apiserver", Path: t.bin(toolAPIServer), Args: []string{
			"--etcd-servers=" + loopURL("http", p.etcd),
			"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(p.apiserver),
			"--cert-dir=" + certDir,
			"--tls-cert-file=" + k.ServingCert, "--tls-private-key-file=" + k.ServingKey,
			"--client-ca-file=" + k.CACert,
			"--token-auth-file=" + k.TokenFile,
			"--authentication-token-webhook-config-file=" + tokenWebhookConfig,
			"--authentication-token-webhook-version=v1",
			"--authorization-mode=RBAC",
			"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
			"--service-account-key-file=" + k.SAPub,
			"--service-account-signing-key-file=" + k.SAKey,
			"--service-cluster-ip-range=" + ServiceCIDR,
			"--endpoint-reconciler-type=none",
			"--allow-privileged=true",
			"--profiling=false",
		}},
		ready: httpReady(caClient(k.CAPEM), loopURL("https", p.apiserver)+"/readyz", k.AdminToken),
	}
}

func kcmComponent(t tools, p ports, k *pki.Files, kubeconfig string, disabled []string, heartbeat time.Duration) component {
	controllers := "*"
	for _, d := range disabled {
		controllers += ",-" + d
	}
	var extra []string
	if heartbeat > 0 {
		// A node is unhealthy after three heartbeats missed.
		extra = append(extra, "--node-monitor-grace-period="+(3*heartbeat).String())
	}
	return component{
		spec: proc.Spec{Name: "kube-controller-manager", Path: t.bin(toolKCM), Args: append([]string{
			"--kubeconfig=" + kubeconfig,
			"--authentication-kubeconfig=" + kubeconfig,
			"--authorization-kubeconfig=" + kubeconfig,
			"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(p.kcm),
			"--leader-elect=false",
			"--service-account-private-key-file=" + k.SAKey,
			"--root-ca-file=" + k.CACert,
			"--use-service-account-credentials=false",
			"--controllers=" + controllers,
			"--allocate-node-cidrs=false",
			"--profiling=false",
			// Client rate limits of a production-sized control plane (the
			// defaults, 20 QPS, make the ReplicaSet controller create
			// 1,000 pods over 50 s, so a scale-out would measure them).
			"--kube-api-qps=200", "--kube-api-burst=400",
		}, extra...)},
		ready: httpReady(insecureClient(), loopURL("https", p.kcm)+"/healthz", ""),
	}
}

func schedulerComponent(t tools, p ports, kubeconfig string) component {
	return component{
		spec: proc.Spec{Name: "kube-scheduler", Path: t.bin(toolScheduler), Args: []string{
			"--kubeconfig=" + kubeconfig,
			"--authentication-kubeconfig=" + kubeconfig,
			"--authorization-kubeconfig=" + kubeconfig,
			"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(p.scheduler),
			"--leader-elect=false",
			"--profiling=false",
			"--kube-api-qps=200", "--kube-api-burst=400", // as the controller manager's
		}},
		ready: httpReady(insecureClient(), loopURL("https", p.scheduler)+"/healthz", ""),
	}
}

func kwokComponent(t tools, p ports, kubeconfig string) component {
	return component{
		spec: proc.Spec{Name: "kwok", Path: t.bin(toolKwok), Args: []string{
			"--kubeconfig=" + kubeconfig,
			"--manage-all-nodes=false",
			"--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
			"--server-address=127.0.0.1:" + strconv.Itoa(p.kwok),
			"--cidr=100.64.0.0/10",
			"--config=" + strings.Join(t.stages, ","),
		}},
		ready: httpReady(plainClient(), loopURL("http", p.kwok)+"/healthz", ""),
	}
}

func motoComponent(t tools, p ports, dataDir string) component {
	return component{
		spec: proc.Spec{Name: "moto", Path: t.bin(toolMoto), Dir: dataDir, Args: []string{
			"-H", "127.0.0.1", "-p", strconv.Itoa(p.moto),
		}, Env: []string{"MOTO_ALLOW_NONEXISTENT_REGION=false", "PYTHONUNBUFFERED=1"}},
		ready: httpReady(plainClient(), loopURL("http", p.moto)+"/moto-api/data.json", ""),
	}
}

func plainClient() *http.Client { return &http.Client{Timeout: 2 * time.Second} }

func insecureClient() *http.Client {
	// Health checks of the controller manager and scheduler, whose
	// self-signed serving certificates they generate themselves.
	return &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // loopback health probe
	}}
}

func caClient(caPEM []byte) *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	return &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
}

// httpReady is a probe that wants 200 from url.
func httpReady(c *http.Client, u, token string) func(context.Context) error {
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := c.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s", u, resp.Status)
		}
		return nil
	}
}

// waitReady polls probe until it succeeds, the process exits, or timeout.
func waitReady(ctx context.Context, p *proc.Process, probe func(context.Context) error, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		if exited, err := p.Exited(); exited {
			return fmt.Errorf("%s exited before it was ready (%v); log %s:\n%s", p.Name, err, p.LogPath, proc.Tail(p.LogPath, 20))
		}
		if last = probe(ctx); last == nil {
			// The probe may have reached another process on the port (one
			// of another local cloud that took it first, while this one
			// was still starting): ready only if this one still runs a
			// moment later, past the few milliseconds a bind takes.
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
			if exited, err := p.Exited(); exited {
				return fmt.Errorf("%s exited before it was ready (%v); log %s:\n%s", p.Name, err, p.LogPath, proc.Tail(p.LogPath, 20))
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready after %s: %v; log %s:\n%s", p.Name, timeout, last, p.LogPath, proc.Tail(p.LogPath, 20))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func logDir(state string) string { return filepath.Join(state, "logs") }
